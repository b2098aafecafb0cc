package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/cluster"
	"github.com/b3-storage/b3/internal/testutil"
)

// peerCall is one request a client might send to a node's S3 port hoping
// to reach the node-to-node endpoints behind it.
type peerCall struct {
	method, path, body string
}

// peerCalls are the node-to-node endpoints, each asked for something an
// attacker would want: the leader's state, a private object's bytes, a
// root user of its own, a member removed, bytes written to disk, a
// declaration of loss, an admin change.
func peerCalls(bucket, key string, versions []uint64) []peerCall {
	evil := `{"op":"add-user","user":{"name":"evil","access_key":"EVILACCESSKEY0000000","secret_key":"evil-secret-evil-secret-evil-secret-0000","root":true}}`
	calls := []peerCall{
		{"GET", "/_b3/v1/info", ""},
		{"GET", "/_b3/v1/member", ""},
		{"GET", "/_b3/v1/lag", ""},
		{"POST", "/_b3/v1/users", evil},
		{"POST", "/_b3/v1/members", `{"op":"remove","id":"n3"}`},
		{"POST", "/_b3/v1/lost", `{"index":1,"bucket":"` + bucket + `","key":"` + key + `"}`},
		{"POST", "/_b3/v1/removed", `{"id":"n3"}`},
		{"PUT", "/_b3/v1/stage?stage=99&bucket=" + bucket + "&key=planted&version=99", "planted bytes"},
		{"DELETE", "/_b3/v1/admin/admin/v1/buckets/" + bucket + "?force=1", ""},
	}
	for _, v := range versions {
		calls = append(calls, peerCall{"GET", fmt.Sprintf("/_b3/v1/bytes?bucket=%s&key=%s&version=%d", bucket, key, v), ""})
	}
	return calls
}

// pathVariants are spellings of a path that a sloppy router could take
// for the same one.
func pathVariants(p string) []string {
	rest := strings.TrimPrefix(p, "/")
	return []string{p, "/" + p, "/x/../" + rest, "/./" + rest, "/%5Fb3/" + strings.TrimPrefix(rest, "_b3/"), strings.Replace(p, "/v1/", "//v1/", 1)}
}

// TestClusterPeerEndpointsClosedToClients: no request a client sends to
// any node's S3 port — leader or follower, anonymous or signed by root,
// under any spelling of the path — reaches the node-to-node endpoints.
// Each is answered with an S3 error, no peer's JSON or object bytes come
// back, and afterwards the group is as it was: three voters, no new user,
// the private object whole and private.
func TestClusterPeerEndpointsClosedToClients(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket, key = "private", "secret.txt"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	secret := randomBytes(11, 200<<10)
	if _, err := cl[0].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(secret)}); err != nil {
		t.Fatal(err)
	}
	// Versions are term<<32|n on b3 node: a guesser tries the first few
	// of the first terms.
	var versions []uint64
	for term := uint64(1); term <= 3; term++ {
		for n := uint64(1); n <= 4; n++ {
			versions = append(versions, term<<32|n)
		}
	}
	for i, node := range c.Nodes {
		for _, call := range peerCalls(bucket, key, versions) {
			for _, p := range pathVariants(call.path) {
				req, err := http.NewRequestWithContext(ctx, call.method, node.Endpoint()+p, strings.NewReader(call.body))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s %s %s: %v", node.ID, call.method, p, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode < 400 || resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("%s (node %d) %s %s: status %d, want an S3 client error: %.200s", node.ID, i, call.method, p, resp.StatusCode, body)
				}
				if !bytes.Contains(body, []byte("<Error>")) || strings.Contains(resp.Header.Get("Content-Type"), "json") {
					t.Errorf("%s %s %s: not an S3 error answer (%s): %.200s", node.ID, call.method, p, resp.Header.Get("Content-Type"), body)
				}
				if bytes.Contains(body, secret[:64]) {
					t.Errorf("%s %s %s: the private object's bytes came back", node.ID, call.method, p)
				}
			}
		}
	}
	// And paths built at random from the pieces of the peer ones, by
	// every method, with a Host that names no bucket or a made-up one.
	rng := rand.New(rand.NewPCG(28, 1))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for range 300 {
		// A peer path in some spelling: junk before it, the prefix
		// escaped or doubled, an endpoint, a query.
		var b strings.Builder
		for range rng.IntN(3) {
			b.WriteString("/" + pick(".", "..", "", "x", bucket))
		}
		b.WriteString("/" + pick("_b3", "_b3", "%5Fb3", "%5fb3", "_B3"))
		b.WriteString(pick("/v1/", "/v1/", "//v1/", "/./v1/", "/v1/../v1/", "/%76%31/"))
		b.WriteString(pick("info", "bytes", "users", "members", "stage", "lost", "removed", "member", "lag", "admin/admin/v1/buckets", key))
		b.WriteString(pick("", "?bucket="+bucket+"&key="+key+"&version=4294967297", "?stage=7"))
		p := b.String()
		node := c.Nodes[rng.IntN(len(c.Nodes))]
		method := pick("GET", "HEAD", "PUT", "POST", "DELETE")
		req, err := http.NewRequestWithContext(ctx, method, node.Endpoint()+"/", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = p // sent as written, not cleaned
		if rng.IntN(2) == 0 {
			req.Host = "_b3.localhost"
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s %s: %v", node.ID, method, p, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(resp.Header.Get("Content-Type"), "json") || bytes.Contains(body, secret[:64]) ||
			(resp.StatusCode < 300 && bytes.Contains(body, []byte(`"cluster_id"`))) {
			t.Errorf("%s %s %s (Host %s): a peer's answer reached a client: %d %s %.200s", node.ID, method, p, req.Host, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}

	// Nothing changed: three voters on every node's view, no user
	// "evil", root still root, the object whole.
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range c.Nodes {
		st, err := c.Status(i)
		if err != nil {
			t.Fatal(err)
		}
		voters := 0
		for _, m := range st.Members {
			if m.Suffrage == "voter" {
				voters++
			}
		}
		if voters != 3 {
			t.Errorf("%s sees %d voters after the attempts, want 3: %+v", c.Nodes[i].ID, voters, st.Members)
		}
		ac := &admin.Client{Endpoint: "http://" + c.Nodes[i].AdminAddr, Token: c.AdminToken}
		users, err := ac.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			if u.Name == "evil" || u.AccessKey == "EVILACCESSKEY0000000" {
				t.Errorf("%s: a client made user %+v through the S3 port", c.Nodes[i].ID, u)
			}
		}
	}
	evil := testutil.S3Client(c.Nodes[0].Endpoint(), "EVILACCESSKEY0000000", "evil-secret-evil-secret-evil-secret-0000")
	if _, err := evil.ListBuckets(ctx, &s3.ListBucketsInput{}); testutil.APICode(err) != "InvalidAccessKeyId" {
		t.Errorf("the planted key: ListBuckets = %v, want InvalidAccessKeyId", err)
	}
	for i := range c.Nodes {
		got := getAll(ctx, t, cl[i], bucket, key)
		if !bytes.Equal(got, secret) {
			t.Errorf("%s: the object changed (%d bytes)", c.Nodes[i].ID, len(got))
		}
	}
}

// TestClusterPeerRefusesForwardedRoot: even over the authenticated
// node-to-node channel, the leader refuses an add-user that makes a root
// user or reuses an existing key (root's included): members forward only
// users `b3 admin users add` made, which are neither.
func TestClusterPeerRefusesForwardedRoot(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ak, _ := c.Keys()
	cases := []struct {
		name, user string
		want       int
	}{
		{"root", `{"name":"r2","access_key":"NEWROOTKEY0000000000","secret_key":"new-root-secret-new-root-secret-00000000","root":true}`, http.StatusBadRequest},
		{"root's key", `{"name":"x","access_key":"` + ak + `","secret_key":"overwritten-secret-overwritten-secret-00"}`, http.StatusConflict},
		{"new", `{"name":"fresh","access_key":"FRESHKEY000000000000","secret_key":"fresh-secret-fresh-secret-fresh-secret-0"}`, http.StatusOK},
		{"the same key again", `{"name":"fresh2","access_key":"FRESHKEY000000000000","secret_key":"another-secret-another-secret-another-00"}`, http.StatusConflict},
	}
	for _, tc := range cases {
		conn, err := cluster.DialPeer(ctx, c.Nodes[leader].ClusterAddr, []byte(testutil.TestClusterSecret), nil, 'H')
		if err != nil {
			t.Fatal(err)
		}
		body := `{"op":"add-user","user":` + tc.user + `}`
		fmt.Fprintf(conn, "POST /_b3/v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d (%s), want %d", tc.name, resp.StatusCode, msg, tc.want)
		}
	}
	// Root's secret still works.
	if _, err := clients(c)[leader].ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Fatalf("root after the attempts: %v", err)
	}
}

// TestClusterForwardKeepsClientAddress: through every node, the leader
// judges aws:SourceIp and aws:SecureTransport by the client's own
// connection, not by the forwarding node's. The bucket lets anonymous
// clients read and write only from 127.0.0.9 and only over TLS (the HLS
// encoder recipe of docs/HLS.md, hardened): the encoder's address is let
// in through each node, 127.0.0.1 is kept out through each node, and a
// client that sends the forward headers itself gains nothing.
func TestClusterForwardKeepsClientAddress(t *testing.T) {
	ca := testutil.NewCA(t)
	c := testutil.StartCluster(t, testutil.ClusterOptions{CA: ca})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ak, sk := c.Keys()
	root := testutil.S3ClientCA(c.Nodes[0].Endpoint(), ak, sk, 30*time.Second, ca.Pool())
	const bucket = "live"
	if err := createBucket(ctx, root, bucket); err != nil {
		t.Fatal(err)
	}
	if _, err := root.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:PutObject"],` +
		`"Resource":"arn:aws:s3:::live/*","Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.9/32"},"Bool":{"aws:SecureTransport":"true"}}}]}`
	if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(pol)}); err != nil {
		t.Fatal(err)
	}
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext,
			TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	}
	encoder, outsider := from("127.0.0.9"), from("127.0.0.1")
	do := func(hc *http.Client, method, url string, body []byte, hdr map[string]string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		for {
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, url, err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond) // an election: retry as an SDK would
				req.Body = io.NopCloser(bytes.NewReader(body))
				continue
			}
			return resp.StatusCode, out
		}
	}
	spoof := map[string]string{"X-B3-Forwarded-Client": "127.0.0.9:1234", "X-B3-Forwarded-Tls": "1", "X-Forwarded-For": "127.0.0.9"}
	for i, node := range c.Nodes {
		url := node.Endpoint() + "/" + bucket + fmt.Sprintf("/seg-%d.ts", i)
		body := randomBytes(uint64(20+i), 10<<10)
		if code, out := do(encoder, "PUT", url, body, nil); code != http.StatusOK {
			t.Errorf("%s: the encoder's PUT from 127.0.0.9 over TLS: %d %s", node.ID, code, out)
		}
		if code, out := do(encoder, "GET", url, nil, nil); code != http.StatusOK || !bytes.Equal(out, body) {
			t.Errorf("%s: the encoder's GET: %d (%d bytes)", node.ID, code, len(out))
		}
		for _, hdr := range []map[string]string{nil, spoof} {
			if code, out := do(outsider, "GET", url, nil, hdr); code != http.StatusForbidden {
				t.Errorf("%s: GET from 127.0.0.1 (headers %v): %d, want 403: %.200s", node.ID, hdr, code, out)
			}
			if code, out := do(outsider, "PUT", url, []byte("overwritten"), hdr); code != http.StatusForbidden {
				t.Errorf("%s: PUT from 127.0.0.1 (headers %v): %d, want 403: %.200s", node.ID, hdr, code, out)
			}
		}
	}
}

// TestClusterAdminChangesReplicate: bucket owner changes, bucket
// deletion and `users remove --new-owner` made through a follower's admin
// API reach every member (they go through the log), so a revoked owner is
// not back after a failover; and root is an administrator on b3 node as
// on b3 server: it reads a bucket another user owns.
func TestClusterAdminChangesReplicate(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % len(c.Nodes)
	acs := make([]*admin.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		acs[i] = &admin.Client{Endpoint: "http://" + n.AdminAddr, Token: c.AdminToken}
	}
	alice, err := acs[follower].AddUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := acs[follower].AddUser(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	aliceS3 := testutil.S3Client(c.Nodes[follower].Endpoint(), alice.AccessKey, alice.Secret)
	for _, b := range []string{"alices", "scratch"} {
		if err := createBucket(ctx, aliceS3, b); err != nil {
			t.Fatal(err)
		}
	}
	body := randomBytes(5, 4<<10)
	if _, err := aliceS3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("scratch"), Key: aws.String("x"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	// Root reads alice's object (an administrator, through every node).
	for i, cl := range clients(c) {
		if got := getAll(ctx, t, cl, "scratch", "x"); !bytes.Equal(got, body) {
			t.Errorf("root through %s: read %d bytes of alice's object", c.Nodes[i].ID, len(got))
		}
	}

	// owners returns each node's view of the buckets' owners.
	owners := func() []map[string]string {
		var out []map[string]string
		for i, ac := range acs {
			list, err := ac.Buckets(ctx)
			if err != nil {
				t.Fatalf("%s: %v", c.Nodes[i].ID, err)
			}
			m := map[string]string{}
			for _, b := range list {
				m[b.Name] = b.Owner
			}
			out = append(out, m)
		}
		return out
	}
	waitAll := func(what string, ok func(map[string]string) bool) {
		t.Helper()
		testutil.WaitFor(t, what+" on every node", func() bool {
			return !slices.ContainsFunc(owners(), func(m map[string]string) bool { return !ok(m) })
		})
	}

	if _, err := acs[follower].SetBucketOwner(ctx, "alices", bob.AccessKey); err != nil {
		t.Fatal(err)
	}
	waitAll("alices owned by bob", func(m map[string]string) bool { return m["alices"] == bob.AccessKey })

	if _, err := acs[follower].DeleteBucket(ctx, "scratch", true); err != nil {
		t.Fatal(err)
	}
	waitAll("scratch deleted", func(m map[string]string) bool { _, ok := m["scratch"]; return !ok })

	res, err := acs[follower].RemoveUserWith(ctx, bob.AccessKey, alice.AccessKey, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.BucketsReassigned, "alices") {
		t.Errorf("users remove --new-owner: reassigned %v, want alices", res.BucketsReassigned)
	}
	waitAll("alices back with alice", func(m map[string]string) bool { return m["alices"] == alice.AccessKey })

	// The leader steps down (killed): the new one has the same owners.
	c.Kill(leader)
	rest := slices.DeleteFunc([]int{0, 1, 2}, func(i int) bool { return i == leader })
	for _, i := range rest {
		testutil.WaitFor(t, "a leader after the kill", func() bool {
			st, err := c.Status(i)
			return err == nil && st.Leader != "" && st.Leader != c.Nodes[leader].ID
		})
		list, err := acs[i].Buckets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range list {
			if b.Name == "scratch" || (b.Name == "alices" && b.Owner != alice.AccessKey) {
				t.Errorf("%s after the failover: %+v", c.Nodes[i].ID, b)
			}
		}
	}
	// Retrying the 503s of a leader that has not begun to serve yet; the
	// refusal itself (403) is not retried.
	bobS3 := retrying(testutil.S3Client(c.Nodes[rest[0]].Endpoint(), bob.AccessKey, bob.Secret))
	if _, err := bobS3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("alices")}); testutil.APICode(err) != "InvalidAccessKeyId" {
		t.Errorf("the removed user after the failover: %v, want InvalidAccessKeyId", err)
	}
}

func getAll(ctx context.Context, t *testing.T, cl *s3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Errorf("get %s/%s: %v", bucket, key, err)
		return nil
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return b
}

// TestClusterAuthBackOffThroughFollower: the leader backs off the client
// that keeps failing to authenticate, by its own address, also when it
// sends through a follower: the guesser (127.0.0.3) is held back (503
// SlowDown), the user beside it on another address (127.0.0.4), through
// the same follower, is not.
func TestClusterAuthBackOffThroughFollower(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := c.Nodes[(leader+1)%len(c.Nodes)]
	ak, sk := c.Keys()
	from := func(ip string) func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}).DialContext
	}
	guesser := testutil.S3ClientDial(follower.Endpoint(), ak, "guess/000000000000000000000000000000000000", 10*time.Second, from("127.0.0.3"))
	for range 10 {
		if _, err := guesser.ListBuckets(ctx, &s3.ListBucketsInput{}); testutil.APICode(err) != "SignatureDoesNotMatch" {
			t.Fatalf("a wrong secret through %s: %v, want SignatureDoesNotMatch", follower.ID, err)
		}
	}
	right := testutil.S3ClientDial(follower.Endpoint(), ak, sk, 10*time.Second, from("127.0.0.3"))
	if _, err := right.ListBuckets(ctx, &s3.ListBucketsInput{}); testutil.APICode(err) != "SlowDown" {
		t.Errorf("the right secret from the guessing address after 10 failures: %v, want SlowDown", err)
	}
	elsewhere := testutil.S3ClientDial(follower.Endpoint(), ak, sk, 10*time.Second, from("127.0.0.4"))
	if _, err := elsewhere.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Errorf("the user from another address, through the same follower: %v", err)
	}
}
