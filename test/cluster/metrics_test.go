package cluster_test

import (
	"bufio"
	"context"

	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/testutil"
)

// metric scrapes node i's /metrics and returns the value of the series
// written exactly as series (name, and labels as Prometheus prints them),
// and whether it is there.
func metric(t testing.TB, c *testutil.Cluster, i int, series string) (float64, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Nodes[i].AdminAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DialContext: c.Nodes[i].Dial}}).Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", c.Nodes[i].ID, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("%s on %s: %v", series, c.Nodes[i].ID, err)
			}
			return v, true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape %s: %v", c.Nodes[i].ID, err)
	}
	return 0, false
}

// mustMetric is metric for a series that must be there.
func mustMetric(t testing.TB, c *testutil.Cluster, i int, series string) float64 {
	t.Helper()
	v, ok := metric(t, c, i, series)
	if !ok {
		t.Fatalf("%s exports no %s", c.Nodes[i].ID, series)
	}
	return v
}
