package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/cluster"
	"github.com/b3-storage/b3/internal/partition"
	"github.com/b3-storage/b3/internal/testutil"
)

// An adversarial review of the code of several groups (routing, the
// catalogue, listings, moves): what a client, an operator without the
// admin token and a process of another cluster can reach, through every
// node and router of a cluster of two groups.

// peerDo sends one request on the node-to-node side (H) of a cluster
// port, holding secret, and returns the answer's status and body.
func peerDo(ctx context.Context, t *testing.T, addr string, secret []byte, method, path string, hdr map[string]string, body string) (int, []byte) {
	t.Helper()
	conn, err := cluster.DialPeer(ctx, addr, secret, nil, 'H')
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	return peerRequest(t, conn, addr, method, path, hdr, body)
}

// peerRequest sends one request on conn, an authenticated connection to
// addr's cluster port, and returns the answer's status and body.
func peerRequest(t *testing.T, conn net.Conn, addr, method, path string, hdr map[string]string, body string) (int, []byte) {
	t.Helper()
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	var extra strings.Builder
	for k, v := range hdr {
		fmt.Fprintf(&extra, "%s: %s\r\n", k, v)
	}
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%sContent-Length: %d\r\n\r\n%s", method, path, extra.String(), len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, addr, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// clusterMap reads the map from a node's cluster port.
func clusterMap(ctx context.Context, t *testing.T, addr string) *partition.Map {
	t.Helper()
	code, body := peerDo(ctx, t, addr, []byte(testutil.TestClusterSecret), "GET", "/_b3/v1/cluster/map?after=0", nil, "")
	if code != http.StatusOK {
		t.Fatalf("map from %s: %d %s", addr, code, body)
	}
	m, err := partition.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// keyIn returns prefix+something whose partition group g owns in m.
func keyIn(t *testing.T, m *partition.Map, bucket, prefix, g string) string {
	t.Helper()
	for i := range 10000 {
		k := fmt.Sprintf("%s%04d", prefix, i)
		if m.Owner(bucket, k) == g {
			return k
		}
	}
	t.Fatalf("no key of %s in group %s", prefix, g)
	return ""
}

// groupPeerCalls are the node-to-node endpoints added for several
// groups, each asked for something an attacker would want: the map and
// the catalogue (every user's secret), g1's members replaced, partitions
// switched, a fence, a source's records, a listing of every group's keys,
// moves paused.
func groupPeerCalls(bucket string) []peerCall {
	return []peerCall{
		{"GET", "/_b3/v1/cluster/map?after=0", ""},
		{"GET", "/_b3/v1/cluster/map?current=1", ""},
		{"POST", "/_b3/v1/cluster/groups", `{"name":"g1","members":[{"id":"evil","address":"127.0.0.1:1"}]}`},
		{"GET", "/_b3/v1/cluster/catalog?group=g2&have=0", ""},
		{"GET", "/_b3/v1/cluster/bucket-empty?bucket=" + bucket, ""},
		{"POST", "/_b3/v1/cluster/move", `{"op":"switch","to":"g2","partitions":[0,1,2]}`},
		{"POST", "/_b3/v1/move/fence?epoch=1", "{}"},
		{"GET", "/_b3/v1/move/records?to=g2&partitions=0,1,2,3", ""},
		{"POST", "/_b3/v1/list", `{"epoch":1,"bucket":"` + bucket + `","objects":{"max_keys":1000}}`},
		{"POST", "/_b3/v1/cluster/settings", `{"op":"pause"}`},
		{"POST", "/_b3/v1/cluster/settings", `{"op":"drain","group":"g1"}`},
	}
}

// TestAttackGroupsBoundaries: in a cluster of two groups with two
// routers, once balanced:
//   - no node's or router's S3 port, signed or not, under any spelling,
//     reaches a node-to-node endpoint (old or added for groups): an S3
//     error comes back, no JSON, no secret key, no object bytes, and the
//     map, the users and the moves are as they were;
//   - no admin port answers them, nor the router's metrics, pprof or
//     cluster calls, without the admin token;
//   - a process holding another cluster's secret is refused by every
//     node's cluster port;
//   - aws:SourceIp and aws:SecureTransport are the client's through every
//     router and node, for keys of either group, whatever forward headers
//     the client sends;
//   - a group other than the first takes no user command from a peer: the
//     users are the first group's to decide (catalog.go).
func TestAttackGroupsBoundaries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	tg := startTwoGroups(t, nil)
	st := tg.waitBalanced(ctx, t)
	routerKeyBoundaries(ctx, t, tg)
	secret := []byte(testutil.TestClusterSecret)
	ak, sk := tg.g1.Keys()
	root := retrying(tg.g1.ClientOf(tg.routers[0], 30*time.Second))
	const bucket = "sec"
	if err := createBucket(ctx, root, bucket); err != nil {
		t.Fatal(err)
	}
	m := clusterMap(ctx, t, tg.g1.Nodes[0].ClusterAddr)
	// Objects in both groups: private ones, and ones the policy opens by
	// address or by TLS.
	body := randomBytes(77, 64<<10)
	var ipKeys, tlsKeys, privKeys []string
	for _, g := range []string{"g1", "g2"} {
		ipKeys = append(ipKeys, keyIn(t, m, bucket, "ip/", g))
		tlsKeys = append(tlsKeys, keyIn(t, m, bucket, "tls/", g))
		privKeys = append(privKeys, keyIn(t, m, bucket, "priv/", g))
	}
	for _, k := range append(append(append([]string{}, ipKeys...), tlsKeys...), privKeys...) {
		if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PUT %s: %v", k, err)
		}
	}
	if _, err := root.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	pol := `{"Version":"2012-10-17","Statement":[` +
		`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::sec/ip/*","Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.9/32"}}},` +
		`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::sec/tls/*","Condition":{"Bool":{"aws:SecureTransport":"true"}}}]}`
	if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(pol)}); err != nil {
		t.Fatal(err)
	}

	endpoints := tg.endpoints()
	var s3Fail int
	// 1. The S3 ports: every peer call, in every spelling, anonymous and
	// signed by root, on every node and router.
	calls := append(groupPeerCalls(bucket), peerCalls(bucket, privKeys[1], nil)...)
	for _, ep := range endpoints {
		for _, call := range calls {
			for _, p := range pathVariants(call.path) {
				req, err := http.NewRequestWithContext(ctx, call.method, ep+p, strings.NewReader(call.body))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s %s %s: %v", ep, call.method, p, err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				bad := resp.StatusCode < 400 || strings.Contains(resp.Header.Get("Content-Type"), "json") ||
					!bytes.Contains(out, []byte("<Error>")) || bytes.Contains(out, []byte(sk)) || bytes.Contains(out, body[:64])
				if bad && s3Fail < 20 {
					s3Fail++
					t.Errorf("S3 port %s: %s %s: %d %s: %.300s", ep, call.method, p, resp.StatusCode, resp.Header.Get("Content-Type"), out)
				}
			}
		}
	}
	// Signed by root, through the SDK's own client (the path is the key
	// of a bucket named like the prefix: still the S3 API).
	for _, ep := range endpoints {
		cl := tg.g1.ClientOf(ep, 30*time.Second)
		_, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("_b3"), Key: aws.String("v1/cluster/catalog")})
		if err == nil {
			t.Errorf("%s: root's GET /_b3/v1/cluster/catalog succeeded", ep)
		}
	}

	// 2. The admin ports without the token (or with a wrong one).
	adminAddrs := []string{tg.admin}
	for _, c := range []*testutil.Cluster{tg.g1, tg.g2} {
		for _, n := range c.Nodes {
			adminAddrs = append(adminAddrs, "http://"+n.AdminAddr)
		}
	}
	adminCalls := append(calls,
		peerCall{"GET", "/debug/pprof/", ""}, peerCall{"GET", "/debug/pprof/cmdline", ""},
		peerCall{"GET", "/debug/pprof/goroutine?debug=2", ""},
		peerCall{"GET", "/admin/v1/cluster", ""},
		peerCall{"POST", "/admin/v1/cluster/rebalance", `{"op":"pause"}`},
		peerCall{"POST", "/admin/v1/cluster/drain", `{"group":"g1"}`},
		peerCall{"GET", "/admin/v1/users", ""},
		peerCall{"DELETE", "/admin/v1/buckets/" + bucket, ""})
	for i, a := range adminAddrs {
		for _, tok := range []string{"", "Bearer wrong-token-wrong-token-0000"} {
			for _, call := range adminCalls {
				req, err := http.NewRequestWithContext(ctx, call.method, a+call.path, strings.NewReader(call.body))
				if err != nil {
					t.Fatal(err)
				}
				if tok != "" {
					req.Header.Set("Authorization", tok)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s %s %s: %v", a, call.method, call.path, err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode < 400 || bytes.Contains(out, []byte(sk)) || bytes.Contains(out, []byte(`"cluster_id"`)) {
					t.Errorf("admin port %s (router: %v) without the token: %s %s: %d: %.200s", a, i == 0, call.method, call.path, resp.StatusCode, out)
				}
			}
		}
	}
	// The consoles (not logged in) answer none of them either.
	for _, c := range []*testutil.Cluster{tg.g1, tg.g2} {
		for _, n := range c.Nodes {
			for _, call := range calls {
				req, err := http.NewRequestWithContext(ctx, call.method, "http://"+n.ConsoleAddr+call.path, strings.NewReader(call.body))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("console %s %s %s: %v", n.ID, call.method, call.path, err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if (resp.StatusCode < 300 && strings.Contains(resp.Header.Get("Content-Type"), "json")) ||
					bytes.Contains(out, []byte(sk)) || bytes.Contains(out, []byte(`"cluster_id"`)) || bytes.Contains(out, []byte(`"owners"`)) {
					t.Errorf("console of %s: %s %s: %d %s: %.200s", n.ID, call.method, call.path, resp.StatusCode, resp.Header.Get("Content-Type"), out)
				}
			}
		}
	}
	// The router's metrics are the admin token's (a node's are open by
	// design, docs/SECURITY.md).
	if resp, err := http.Get(tg.admin + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("router /metrics without the token: %d", resp.StatusCode)
		}
	}

	// 3. Another cluster's secret: every cluster port refuses it.
	for _, c := range []*testutil.Cluster{tg.g1, tg.g2} {
		for _, n := range c.Nodes {
			for _, proto := range []byte{'H', 'F', 0x01} {
				conn, err := cluster.DialPeer(ctx, n.ClusterAddr, []byte("another-clusters-secret-0000"), nil, proto)
				if err == nil {
					// The listener cannot tell before the dialer's proof:
					// it must close without answering.
					fmt.Fprintf(conn, "GET /_b3/v1/cluster/catalog?group=g2&have=0 HTTP/1.1\r\nHost: x\r\n\r\n")
					_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
					got, _ := io.ReadAll(conn)
					conn.Close()
					if len(got) > 0 {
						t.Errorf("%s took another cluster's secret (proto %q): %.200s", n.ID, proto, got)
					}
				}
			}
		}
	}

	// 4. aws:SourceIp and aws:SecureTransport through every router and
	// node, keys of both groups, forward headers forged.
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	}
	encoder, outsider := from("127.0.0.9"), from("127.0.0.1")
	get := func(hc *http.Client, url string, hdr map[string]string) (int, []byte) {
		for {
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", url, err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			return resp.StatusCode, out
		}
	}
	spoofs := []map[string]string{nil,
		{"X-B3-Forwarded-Client": "127.0.0.9:1234", "X-B3-Forwarded-Tls": "1", "X-Forwarded-For": "127.0.0.9", "X-Forwarded-Proto": "https", "Forwarded": "for=127.0.0.9;proto=https"},
		{"Connection": "X-B3-Forwarded-Client, X-B3-Forwarded-Tls", "X-B3-Forwarded-Client": "127.0.0.9:1234", "X-B3-Forwarded-Tls": "1"},
		{"x-b3-forwarded-client": "127.0.0.9:1", "x-b3-forwarded-tls": "1"},
	}
	for _, ep := range endpoints {
		for i := range ipKeys {
			if code, out := get(encoder, ep+"/"+bucket+"/"+ipKeys[i], nil); code != http.StatusOK || !bytes.Equal(out, body) {
				t.Errorf("%s: GET %s from 127.0.0.9: %d (%d bytes), want 200", ep, ipKeys[i], code, len(out))
			}
			for _, hdr := range spoofs {
				if code, out := get(outsider, ep+"/"+bucket+"/"+ipKeys[i], hdr); code != http.StatusForbidden {
					t.Errorf("%s: GET %s from 127.0.0.1 (headers %v): %d, want 403: %.200s", ep, ipKeys[i], hdr, code, out)
				}
				if code, out := get(outsider, ep+"/"+bucket+"/"+tlsKeys[i], hdr); code != http.StatusForbidden {
					t.Errorf("%s: GET %s over plain HTTP (headers %v): %d, want 403: %.200s", ep, tlsKeys[i], hdr, code, out)
				}
				if code, out := get(encoder, ep+"/"+bucket+"/"+privKeys[i], hdr); code != http.StatusForbidden {
					t.Errorf("%s: anonymous GET of private %s (headers %v): %d, want 403: %.200s", ep, privKeys[i], hdr, code, out)
				}
			}
		}
	}

	// Anonymous listings and bucket calls (run on g1, asking g2 for its
	// keys) are refused through every node and router.
	for _, ep := range endpoints {
		for _, q := range []string{"", "?list-type=2", "?versions", "?uploads", "?policy", "?acl", "?location"} {
			code, out := get(outsider, ep+"/"+bucket+q, nil)
			if code != http.StatusForbidden || bytes.Contains(out, []byte(privKeys[1])) || bytes.Contains(out, []byte(ipKeys[1])) {
				t.Errorf("%s: anonymous GET /%s%s: %d, want 403: %.300s", ep, bucket, q, code, out)
			}
		}
		if code, out := get(outsider, ep+"/", nil); code != http.StatusForbidden || bytes.Contains(out, []byte(bucket)) {
			t.Errorf("%s: anonymous ListBuckets: %d: %.300s", ep, code, out)
		}
	}

	// 5. A peer's user command to the second group's leader: the users
	// are the first group's to decide.
	l2, err := tg.g2.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const plantedKey, plantedSecret = "PLANTEDKEY0000000000", "planted-secret-planted-secret-planted-00"
	planted := `{"op":"add-user","user":{"name":"planted","access_key":"` + plantedKey + `","secret_key":"` + plantedSecret + `"}}`
	if code, out := peerDo(ctx, t, tg.g2.Nodes[l2].ClusterAddr, secret, "POST", "/_b3/v1/users", nil, planted); code == http.StatusOK {
		t.Errorf("g2's leader took a user command the first group never decided: %d %s", code, out)
	}
	// The same through g2's admin-forward endpoint: a bucket deletion.
	if code, out := peerDo(ctx, t, tg.g2.Nodes[l2].ClusterAddr, secret, "DELETE", "/_b3/v1/admin/admin/v1/buckets/"+bucket+"?force=1",
		map[string]string{"X-B3-Forwarded-Client": "127.0.0.1:1", "X-B3-Forwarded-Tls": "0"}, ""); code < 400 {
		t.Errorf("g2's leader deleted a bucket the first group never decided to: %d %s", code, out)
	}

	// A forwarded request is served by the leader of the owning group or
	// refused, never forwarded again (no loop): a follower of g2 and
	// g2's leader asked for a key of g1 both answer 503.
	fwd := map[string]string{"X-B3-Forwarded-Client": "127.0.0.9:1", "X-B3-Forwarded-Tls": "1"}
	for i, n := range tg.g2.Nodes {
		path := "/" + bucket + "/" + ipKeys[1]
		if i == l2 {
			path = "/" + bucket + "/" + ipKeys[0]
		}
		conn, err := cluster.DialPeer(ctx, n.ClusterAddr, secret, nil, 'F')
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nX-B3-Forwarded-Client: %s\r\nX-B3-Forwarded-Tls: %s\r\nConnection: close\r\n\r\n", path, fwd["X-B3-Forwarded-Client"], fwd["X-B3-Forwarded-Tls"])
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s (leader %v) served a forwarded GET %s it does not lead or own: %d %.200s", n.ID, i == l2, path, resp.StatusCode, out)
		}
	}

	// A source gives only the records of partitions moving from it to
	// the asker, and the first group switches only fenced moves: with no
	// move under way, every leader refuses both.
	l1, err := tg.g1.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, leader := range []string{tg.g1.Nodes[l1].ClusterAddr, tg.g2.Nodes[l2].ClusterAddr} {
		for _, q := range []string{"to=g2&partitions=0,1,2", "to=g1&partitions=0,1,2", "to=&partitions=5", "to=g2&partitions=", "to=g2&partitions=0,1&fence=1"} {
			code, out := peerDo(ctx, t, leader, secret, "GET", "/_b3/v1/move/records?"+q, nil, "")
			if code < 400 {
				t.Errorf("%s gave records (%s) of partitions it does not give: %d %.300s", leader, q, code, out)
			}
		}
	}
	for _, op := range []string{"switch", "fence"} {
		code, out := peerDo(ctx, t, tg.g1.Nodes[l1].ClusterAddr, secret, "POST", "/_b3/v1/cluster/move", nil,
			`{"op":"`+op+`","to":"g2","partitions":[`+fmt.Sprint(m.Partition(bucket, privKeys[0]))+`]}`)
		if code < 400 {
			t.Errorf("the first group's leader took a %s of a partition that is not moving: %d %.300s", op, code, out)
		}
	}

	// Nothing changed: the map (no switch, no pause, no drain, g1's
	// members), the users on every node of both groups, the bucket.
	m2 := clusterMap(ctx, t, tg.g1.Nodes[0].ClusterAddr)
	for p := range m.Owners {
		if m.Owners[p] != m2.Owners[p] {
			t.Errorf("partition %d went from %s to %s", p, m.Owners[p], m2.Owners[p])
		}
	}
	if m2.Paused || len(m2.Groups) != 2 {
		t.Errorf("the map changed: paused %v, %d groups", m2.Paused, len(m2.Groups))
	}
	for _, g := range m2.Groups {
		if g.Draining {
			t.Errorf("group %s is draining", g.Name)
		}
		for _, mb := range g.Members {
			if mb.ID == "evil" {
				t.Errorf("group %s has member %+v", g.Name, mb)
			}
		}
	}
	for _, c := range []*testutil.Cluster{tg.g1, tg.g2} {
		for _, n := range c.Nodes {
			ac := &admin.Client{Endpoint: "http://" + n.AdminAddr, Token: c.AdminToken}
			users, err := ac.Users(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range users {
				if u.Name == "evil" || u.Name == "planted" {
					t.Errorf("%s holds user %+v", n.ID, u)
				}
			}
			bs, err := ac.Buckets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, b := range bs {
				found = found || b.Name == bucket
			}
			if !found {
				t.Errorf("%s no longer holds bucket %s", n.ID, bucket)
			}
		}
	}
	// The planted key authenticates nowhere, in particular not on g2's
	// keys.
	for _, ep := range endpoints {
		ev := testutil.S3Client(ep, plantedKey, plantedSecret)
		_, err := ev.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(privKeys[1])})
		if code := testutil.APICode(err); code != "InvalidAccessKeyId" {
			t.Errorf("%s: GET of a g2 key with the planted key: %v (%s), want InvalidAccessKeyId", ep, err, code)
		}
	}
	_ = ak
	_ = st
}

// TestAttackGroupsRouterTLS: a router serving HTTPS passes its client's
// TLS state on: a policy that opens keys only over TLS lets an anonymous
// HTTPS client read them in both groups, through the router and through
// a node of each group (plain HTTP with forged forward headers is
// refused in TestAttackGroupsBoundaries).
func TestAttackGroupsRouterTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ca := testutil.NewCA(t)
	tg := &twoGroups{g1: testutil.StartCluster(t, testutil.ClusterOptions{CA: ca})}
	tg.g2 = testutil.StartCluster(t, testutil.ClusterOptions{FirstID: 3, CA: ca,
		Args: []string{"--group", "g2", "--cluster-seeds", tg.g1.Nodes[0].ClusterAddr}})
	adminAddr := testutil.FreeAddr(t)
	p, _ := tg.g1.StartRouter([]string{tg.g1.Nodes[0].ClusterAddr}, "--admin-address", adminAddr,
		"--tls-cert", tg.g1.TLSCert, "--tls-key", tg.g1.TLSKey)
	tg.routerProcs, tg.admin = []*testutil.Process{p}, "http://"+adminAddr
	var routerURL string
	for _, line := range strings.Split(p.Output.String(), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "S3" {
			routerURL = f[2]
		}
	}
	if !strings.HasPrefix(routerURL, "https://") {
		t.Fatalf("router URL %q", routerURL)
	}
	tg.waitBalanced(ctx, t)
	ak, sk := tg.g1.Keys()
	root := retrying(testutil.S3ClientCA(routerURL, ak, sk, 30*time.Second, ca.Pool()))
	const bucket = "tlsonly"
	if err := createBucket(ctx, root, bucket); err != nil {
		t.Fatal(err)
	}
	if _, err := root.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::tlsonly/*","Condition":{"Bool":{"aws:SecureTransport":"true"}}}]}`
	if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(pol)}); err != nil {
		t.Fatal(err)
	}
	m := clusterMap(ctx, t, tg.g1.Nodes[0].ClusterAddr)
	body := randomBytes(5, 9000)
	var keys []string
	for _, g := range []string{"g1", "g2"} {
		k := keyIn(t, m, bucket, "seg-", g)
		keys = append(keys, k)
		if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	for _, ep := range []string{routerURL, tg.g1.Nodes[1].Endpoint(), tg.g2.Nodes[1].Endpoint()} {
		for _, k := range keys {
			for {
				resp, err := hc.Get(ep + "/" + bucket + "/" + k)
				if err != nil {
					t.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable && ctx.Err() == nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				if resp.StatusCode != http.StatusOK || !bytes.Equal(out, body) {
					t.Errorf("anonymous HTTPS GET %s through %s: %d %.200s", k, ep, resp.StatusCode, out)
				}
				break
			}
		}
	}
}
