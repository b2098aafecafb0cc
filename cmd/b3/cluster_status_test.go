package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestClusterStatusTable: a member that is down shows one word in the
// table, whose lines stay short, and the reason below it.
func TestClusterStatusTable(t *testing.T) {
	why := `Get "http://127.0.0.1:7003/_b3/v1/info": dial tcp 127.0.0.1:7003: connect: connection refused (and more words of a long Go error)`
	st := admin.ClusterStatus{Node: "n1", Leader: "n1", Term: 3, Replication: "sync", Members: []admin.ClusterMember{
		{ID: "n1", ClusterAddress: "127.0.0.1:7001", Healthy: true, State: "Leader", AppliedIndex: 42},
		{ID: "n2", ClusterAddress: "127.0.0.1:7002", Healthy: true, State: "Follower", AppliedIndex: 42},
		{ID: "n3", ClusterAddress: "127.0.0.1:7003", Error: why},
	}}
	var out bytes.Buffer
	printClusterStatus(&out, st)
	text := out.String()
	table, below, _ := strings.Cut(text, "\n\n")
	for _, line := range strings.Split(table, "\n") {
		if len(line) > 100 {
			t.Errorf("table line of %d columns: %q", len(line), line)
		}
	}
	if !strings.Contains(table, "DOWN") || strings.Contains(table, "refused") {
		t.Errorf("table does not say DOWN in one word:\n%s", text)
	}
	if !strings.Contains(below, "n3 is DOWN: "+why) {
		t.Errorf("the reason is not below the table:\n%s", text)
	}
}

// TestClusterStatusOfServer: the cluster commands against a b3 server say
// that it is a single server, not "HTTP 404".
func TestClusterStatusOfServer(t *testing.T) {
	s := testutil.StartServer(t, testutil.ServerOptions{})
	b3admin := adminProcess(t, s)
	for _, args := range [][]string{{"cluster", "status"}, {"cluster", "remove", "n2"}} {
		out, code := b3admin(args...)
		if code == 0 || !strings.Contains(out, "single b3 server") || strings.Contains(out, "404") {
			t.Errorf("b3 admin %s against a b3 server: exit %d, %q; want a failure saying it is a single server", strings.Join(args, " "), code, out)
		}
	}
}
