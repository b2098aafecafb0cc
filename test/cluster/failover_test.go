package cluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/testutil"
)

// killCycles is the number of leader kills per run: 10 in CI, more with
// B3_CLUSTER_KILLS (the long variant).
func killCycles(t *testing.T) int {
	if v := os.Getenv("B3_CLUSTER_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("B3_CLUSTER_KILLS=%q: want a positive number", v)
		}
		return n
	}
	return 10
}

// Register operations on the few keys whose history porcupine checks.
type regInput struct {
	op    string // "get", "put", "delete"
	key   string
	value string
}

type regOutput struct {
	value string // "" when the key is absent
}

// registerModel is one S3 key as a register: a PUT sets it, a DELETE
// empties it, a GET returns what it holds.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(regInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(regInput)
		switch in.op {
		case "put":
			return true, in.value
		case "delete":
			return true, ""
		}
		return output.(regOutput).value == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(regInput)
		if in.op == "get" {
			return fmt.Sprintf("get(%s) -> %q", in.key, output.(regOutput).value)
		}
		return fmt.Sprintf("%s(%s, %q)", in.op, in.key, in.value)
	},
}

// history records operations from many goroutines.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// loadState is what the writers learned: acknowledged unique objects,
// deleted ones, and writes whose outcome is unknown.
type loadState struct {
	mu      sync.Mutex
	acked   map[string][32]byte
	deleted map[string]bool
	maybe   map[string][32]byte
	writes  int
	fails   int
}

// body of a unique object: sizes around the inline limit and well above
// it, so both kinds of write (bytes in the log entry, bytes beside it) are
// killed in the middle.
func uniqueBody(r *rand.Rand) []byte {
	sizes := []int{200, 3000, 64 << 10, 300 << 10}
	b := make([]byte, sizes[r.IntN(len(sizes))])
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// registerBody carries value on its first line, padded to an inline or a
// staged size.
func registerBody(value string, r *rand.Rand) []byte {
	pad := 0
	if r.IntN(2) == 0 {
		pad = 20 << 10
	}
	return append([]byte(value+"\n"), bytes.Repeat([]byte{'.'}, pad)...)
}

func registerValue(body []byte) string {
	v, _, _ := bytes.Cut(body, []byte("\n"))
	return string(v)
}

func notFound(err error) bool {
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == 404
}

// TestClusterLeaderKill kills the leader with SIGKILL under a concurrent
// write load, killCycles times, restarting it each time. Every
// acknowledged object must read back identical through every node and
// from every node's own store, nothing deleted may come back, writes must
// resume after each kill (the time is measured and logged, not asserted),
// and the history of the register keys must be linearizable.
func TestClusterLeaderKill(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	ak, sk := c.Keys()
	var load []*s3.Client
	for _, n := range c.Nodes {
		load = append(load, testutil.S3ClientTimeout(n.Endpoint(), ak, sk, 15*time.Second))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const bucket = "failover"
	if err := createBucket(ctx, load[0], bucket); err != nil {
		t.Fatal(err)
	}

	st := &loadState{acked: map[string][32]byte{}, deleted: map[string]bool{}, maybe: map[string][32]byte{}}
	hist := &history{start: time.Now()}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const workers = 4
	registers := []string{"r0", "r1", "r2", "r3", "r4"}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				cl := load[r.IntN(len(load))]
				var err error
				if r.IntN(2) == 0 {
					err = uniqueOp(ctx, cl, bucket, w, seq, r, st)
				} else {
					err = registerOp(ctx, cl, bucket, w, seq, registers[r.IntN(len(registers))], r, hist)
				}
				if err != nil {
					time.Sleep(100 * time.Millisecond) // as a client backs off
				}
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	var failovers []time.Duration
	probe := func() time.Duration {
		start := time.Now()
		for i := 0; ; i++ {
			cl := load[i%len(load)]
			_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("probe"), Body: strings.NewReader("p")})
			if err == nil {
				return time.Since(start)
			}
			if ctx.Err() != nil {
				t.Fatalf("writes did not resume: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for cycle := range killCycles(t) {
		time.Sleep(time.Second) // load before the kill
		leader, err := c.Leader(ctx)
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		c.Kill(leader)
		failovers = append(failovers, probe())
		if err := c.Start(leader); err != nil {
			t.Fatalf("cycle %d: restart %s: %v", cycle, c.Nodes[leader].ID, err)
		}
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	slices.Sort(failovers)
	t.Logf("%d kills; time from kill -9 to the first acknowledged write: min %s, median %s, max %s; %d writes acknowledged, %d failed",
		len(failovers), failovers[0], failovers[len(failovers)/2], failovers[len(failovers)-1], st.writes, st.fails)
	if st.writes == 0 {
		t.Fatal("no write was acknowledged")
	}

	// Every acknowledged object, through every node.
	for key, sum := range st.acked {
		for i, cl := range load {
			body, err := getObject(ctx, cl, bucket, key)
			if err != nil {
				t.Fatalf("%s through %s: %v", key, c.Nodes[i].ID, err)
			}
			if sha256.Sum256(body) != sum {
				t.Fatalf("%s through %s: not the acknowledged bytes", key, c.Nodes[i].ID)
			}
		}
	}
	for key := range st.deleted {
		for i, cl := range load {
			if _, err := getObject(ctx, cl, bucket, key); !notFound(err) {
				t.Fatalf("deleted %s through %s: %v, want 404", key, c.Nodes[i].ID, err)
			}
		}
	}
	checkLinearizable(t, hist)

	// Every node's own store: the same objects, the acknowledged among them.
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	snaps := replicaSnapshots(t, c, bucket)
	for i, snap := range snaps {
		for key, sum := range st.acked {
			if snap[key] != sum {
				t.Fatalf("%s's store: acknowledged %s missing or different", c.Nodes[i].ID, key)
			}
		}
		for key := range st.deleted {
			if _, ok := snap[key]; ok {
				t.Fatalf("%s's store: deleted %s came back", c.Nodes[i].ID, key)
			}
		}
		for key, sum := range snap {
			if key == "probe" || slices.Contains(registers, key) {
				continue
			}
			if st.acked[key] != sum && st.maybe[key] != sum {
				t.Fatalf("%s's store: %s holds bytes nobody wrote", c.Nodes[i].ID, key)
			}
		}
		if i > 0 && !mapsEqual(snap, snaps[0]) {
			t.Fatalf("%s's store differs from %s's", c.Nodes[i].ID, c.Nodes[0].ID)
		}
	}
}

func mapsEqual(a, b map[string][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// uniqueOp writes a new key, and now and then deletes one acknowledged
// before.
func uniqueOp(ctx context.Context, cl *s3.Client, bucket string, w, seq int, r *rand.Rand, st *loadState) error {
	if seq%5 == 4 {
		st.mu.Lock()
		var victim string
		for k := range st.acked {
			if strings.HasPrefix(k, fmt.Sprintf("u%d-", w)) {
				victim = k
				break
			}
		}
		st.mu.Unlock()
		if victim != "" {
			_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(victim)})
			st.mu.Lock()
			if err == nil {
				st.deleted[victim] = true
				delete(st.acked, victim)
			} else {
				// Unknown outcome: neither promised present nor absent.
				st.maybe[victim] = st.acked[victim]
				delete(st.acked, victim)
			}
			st.mu.Unlock()
			return err
		}
	}
	key := fmt.Sprintf("u%d-%d", w, seq)
	body := uniqueBody(r)
	_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	st.mu.Lock()
	defer st.mu.Unlock()
	if err == nil {
		st.acked[key] = sha256.Sum256(body)
		st.writes++
	} else {
		st.maybe[key] = sha256.Sum256(body)
		st.fails++
	}
	return err
}

// registerOp runs one get, put or delete on a register key and records it.
func registerOp(ctx context.Context, cl *s3.Client, bucket string, w, seq int, key string, r *rand.Rand, h *history) error {
	op := porcupine.Operation{ClientId: w, Call: h.now()}
	var err error
	switch r.IntN(3) {
	case 0:
		value := fmt.Sprintf("w%d-%d", w, seq)
		op.Input = regInput{op: "put", key: key, value: value}
		_, err = cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(registerBody(value, r))})
	case 1:
		op.Input = regInput{op: "delete", key: key}
		_, err = cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	default:
		op.Input = regInput{op: "get", key: key}
		var body []byte
		body, err = getObject(ctx, cl, bucket, key)
		switch {
		case err == nil:
			op.Output = regOutput{value: registerValue(body)}
		case notFound(err):
			op.Output, err = regOutput{}, nil
		default:
			return err // a failed read has no effect
		}
	}
	op.Return = h.now()
	if err != nil {
		if refused(err) {
			return err // never reached a node: it did not happen
		}
		// A write that failed otherwise may still have happened, at any
		// time after its call.
		op.Return = math.MaxInt64
	}
	if op.Output == nil {
		op.Output = regOutput{}
	}
	h.add(op)
	return err
}

// refused reports a request that no node received (the connection was
// refused: the node it was sent to is down).
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

func checkLinearizable(t *testing.T, h *history) {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(registerModel, h.ops, 2*time.Minute)
	switch res {
	case porcupine.Ok:
		t.Logf("history of %d register operations is linearizable", len(h.ops))
	case porcupine.Illegal:
		path := filepath.Join(os.TempDir(), fmt.Sprintf("b3-history-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(registerModel, info, path); err == nil {
			t.Errorf("visualization of the history: %s", path)
		}
		t.Fatalf("the history of %d register operations is not linearizable", len(h.ops))
	default:
		t.Fatalf("porcupine could not decide on %d operations in time", len(h.ops))
	}
}
