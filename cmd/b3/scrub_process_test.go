package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/scrub"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestScrubServer: on a b3 server, bits flipped in a segment, a segment's
// tail cut off and a segment file deleted; after a restart, the scrub
// (b3 admin scrub start, status --json) names exactly the objects those
// hit, with their damaged bytes, in the JSON, the metrics and the log;
// reads of them fail and never return other bytes, every other object
// reads back identical; the findings outlive a restart.
func TestScrubServer(t *testing.T) {
	s := testutil.StartServer(t, testutil.ServerOptions{Args: []string{
		"--segment-size", "1MiB", "--inline-max", "0", "--cache-size", "0",
		"--vacuum-interval", "0", "--scrub-interval", "0"}})
	b3admin := adminProcess(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := s.Client(30 * time.Second)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("scrub")}); err != nil {
		t.Fatal(err)
	}
	// 300 KiB objects, three to a 1 MiB segment, and two of 2.5 MiB: three
	// records (1 MiB chunks) each, across segments.
	rng := rand.New(rand.NewPCG(1, 2))
	objects := map[string][]byte{}
	for i := range 24 {
		objects[fmt.Sprintf("o%02d", i)] = randomBytes(rng, 300<<10)
	}
	objects["big"] = randomBytes(rng, 5<<19)
	objects["a-wide"] = randomBytes(rng, 5<<19)
	keys := make([]string, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("scrub"), Key: aws.String(k), Body: bytes.NewReader(objects[k])}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	// The damage, each in a sealed segment (not the last one).
	segDir := filepath.Join(s.Data, "segments")
	files, recs := testutil.SegmentRecords(t, segDir)
	for _, f := range files {
		var layout []string
		for _, r := range recs[f] {
			layout = append(layout, fmt.Sprintf("%s@%d+%d", r.Key, r.Offset, r.Size))
		}
		t.Logf("%s: %s", filepath.Base(f), strings.Join(layout, " "))
	}
	// record finds key's nth record (and the index of its file).
	record := func(key string, nth int) (testutil.SegmentRecord, int) {
		t.Helper()
		for i, f := range files[:len(files)-1] {
			for _, r := range recs[f] {
				if r.Key == key {
					if nth == 0 {
						return r, i
					}
					nth--
				}
			}
		}
		t.Fatalf("no record %d of %s in a sealed segment", nth, key)
		return testutil.SegmentRecord{}, 0
	}
	want := map[string]bool{}
	// 1. A bit flipped in the payload of o02's record, and in a-wide's last
	// record (its first two read fine: a GET fails after the headers).
	flipped, _ := record("o02", 0)
	testutil.FlipBit(t, flipped.File, flipped.Offset+flipped.Size-1000)
	wideLast, _ := record("a-wide", 2)
	testutil.FlipBit(t, wideLast.File, wideLast.Offset+wideLast.Size-1)
	want[flipped.Key], want["a-wide"] = true, true
	// 2. The last record of o07's segment cut in its middle.
	_, at := record("o07", 0)
	cut := recs[files[at]][len(recs[files[at]])-1]
	if err := os.Truncate(cut.File, cut.Offset+cut.Size/2); err != nil {
		t.Fatal(err)
	}
	want[cut.Key] = true
	// 3. The segments of big's middle record and of o13 deleted: every
	// object with a record in them.
	_, bigAt := record("big", 1)
	_, o13At := record("o13", 0)
	for _, f := range []string{files[bigAt], files[o13At]} {
		for _, r := range recs[f] {
			want[r.Key] = true
		}
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("damaged: %v (flipped %s and a-wide, cut %s)", want, flipped.Key, cut.Key)

	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if out, code := b3admin("scrub", "start"); code != 0 || !strings.Contains(out, "scrub pass started") {
		t.Fatalf("scrub start: %d %s", code, out)
	}
	var st scrub.Status
	testutil.WaitFor(t, "the scrub pass to end", func() bool {
		st = mustJSON[scrub.Status](t, b3admin, "scrub", "status", "--json")
		return !st.Running && st.Passes == 1
	})
	got := map[string]bool{}
	for _, d := range st.Damaged {
		if d.Bucket != "scrub" || !d.Current || d.Size != int64(len(objects[d.Key])) || len(d.Ranges) == 0 {
			t.Errorf("damaged entry %+v", d)
		}
		got[d.Key] = true
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scrub found %v damaged, want %v; status %+v", got, want, st)
	}
	if st.Checked != int64(len(objects)) || st.CorruptRecords < 2 || st.Repaired != 0 || st.SegmentsChecked < 5 || st.Counts.Damaged != int64(len(want)) ||
		st.MetadataKeys < int64(len(objects)) || st.LastError != "" {
		t.Errorf("counts: %+v", st.Counts)
	}
	// Exactly the bytes hit: the flipped record, the only one of a 300
	// KiB object; big's second MiB, in the deleted segment 2.
	for _, d := range st.Damaged {
		if d.Key == flipped.Key && (len(d.Ranges) != 1 || d.Ranges[0].Offset != 0 || d.Ranges[0].Length != 300<<10 || !strings.Contains(d.Ranges[0].Reason, "checksum")) {
			t.Errorf("flipped object's ranges: %+v", d.Ranges)
		}
		if d.Key == "big" && (len(d.Ranges) != 1 || d.Ranges[0].Offset != 1<<20 || d.Ranges[0].Length != 1<<20) {
			t.Errorf("big's ranges: %+v", d.Ranges)
		}
	}
	out, code := b3admin("scrub", "status")
	t.Logf("b3 admin scrub status:\n%s", out)
	if code != 0 || !strings.Contains(out, "damaged objects") || !strings.Contains(out, fmt.Sprintf("%q", flipped.Key)) {
		t.Errorf("scrub status table: %d %s", code, out)
	}
	m := metrics(t, s)
	if !strings.Contains(m, fmt.Sprintf("b3_scrub_damaged_objects %d\n", len(want))) ||
		!strings.Contains(m, fmt.Sprintf(`b3_scrub_damaged_object{bucket="scrub",key=%q`, flipped.Key)) {
		t.Errorf("metrics lack the damage:\n%s", grepLines(m, "b3_scrub"))
	}
	if log := s.Output(); !strings.Contains(log, "scrub: damaged object") || !strings.Contains(log, "key="+flipped.Key) {
		t.Errorf("no damage logged")
	}

	// Reads: the damaged fail, the others read back whole.
	checkReads := func() {
		t.Helper()
		for _, k := range keys {
			body, err := getAll(ctx, c, "scrub", k)
			switch {
			case want[k] && err == nil:
				t.Errorf("GET %s (damaged) succeeded with %d bytes (identical: %v)", k, len(body), bytes.Equal(body, objects[k]))
			case want[k] && !bytes.HasPrefix(objects[k], body):
				t.Errorf("GET %s (damaged): %d bytes before the error, not the object's", k, len(body))
			case want[k] && k != "a-wide" && testutil.APICode(err) != "InternalError":
				// Damage in the first record read, or a segment missing:
				// found before the headers go out.
				t.Errorf("GET %s (damaged): %v, want 500 InternalError", k, err)
			case !want[k] && err != nil:
				t.Errorf("GET %s: %v", k, err)
			case !want[k] && !bytes.Equal(body, objects[k]):
				t.Errorf("GET %s: other bytes", k)
			}
		}
	}
	checkReads()
	if !strings.Contains(s.Output(), "internal error") {
		t.Errorf("a failed read is not logged as an internal error")
	}

	// The findings outlive a restart.
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	st = mustJSON[scrub.Status](t, b3admin, "scrub", "status", "--json")
	if st.Running || st.Passes != 1 || len(st.Damaged) != len(want) || st.Finished == nil {
		t.Errorf("after a restart: %+v", st)
	}
	checkReads()
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// getAll reads a whole object; an error if the read fails anywhere.
func getAll(ctx context.Context, c *s3.Client, bucket, key string) ([]byte, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(slices.Clip(out), "\n")
}
