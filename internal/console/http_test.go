package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"

	"github.com/b3-storage/b3/internal/console"
	"github.com/b3-storage/b3/internal/testutil"
)

// client is one browser as the console sees it: a cookie jar and the
// CSRF token of its session.
type client struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func newClient(t *testing.T, base string) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: base, http: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

func (c *client) do(method, path string, body []byte, header map[string]string) (*http.Response, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, data
}

func (c *client) login(accessKey, secretKey string) *http.Response {
	c.t.Helper()
	body, _ := json.Marshal(map[string]string{"accessKey": accessKey, "secretKey": secretKey})
	resp, data := c.do("POST", "/api/login", body, map[string]string{"Content-Type": "application/json", "X-B3-Console": "1"})
	if resp.StatusCode == http.StatusOK {
		var info struct{ CSRF string }
		if err := json.Unmarshal(data, &info); err != nil || info.CSRF == "" {
			c.t.Fatalf("login answer %s: %v", data, err)
		}
		c.csrf = info.CSRF
	}
	return resp
}

// TestConsoleRefuses: without a session, with a wrong or missing CSRF
// token, from another origin, or as a user the S3 API refuses, a request
// changes nothing; the same request with the session's token works.
func TestConsoleRefuses(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{Args: []string{"--users", "alice:" + aliceKey + ":" + aliceSecret}})
	base := "http://" + srv.ConsoleAddr
	accessKey, secretKey := srv.Keys()

	anon := newClient(t, base)
	root := newClient(t, base)
	if resp := root.login(accessKey, secretKey); resp.StatusCode != http.StatusOK {
		t.Fatalf("root login: %s", resp.Status)
	}
	// Right after a good login of the same key (a signer that caches
	// signing keys by access key alone would let this one in).
	intruder := newClient(t, base)
	if resp := intruder.login(accessKey, "wrong secret"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with a wrong secret: %s, want 401", resp.Status)
	}
	alice := newClient(t, base)
	if resp := alice.login(aliceKey, aliceSecret); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice login: %s", resp.Status)
	}
	// A login posted by a form of another site lacks the console's header.
	resp, _ := anon.do("POST", "/api/login", []byte(`{"accessKey":"`+accessKey+`","secretKey":"`+secretKey+`"}`), map[string]string{"Content-Type": "application/json"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("login without X-B3-Console: %s, want 403", resp.Status)
	}

	for _, tc := range []struct {
		name   string
		who    *client
		method string
		path   string
		header map[string]string
		want   int
	}{
		{"no session: page data", anon, "GET", "/api/session", nil, 401},
		{"no session: list buckets", anon, "GET", "/s3/", nil, 401},
		{"no session: create bucket", anon, "PUT", "/s3/refused-1", nil, 401},
		{"no session: admin", anon, "GET", "/api/admin/users", nil, 401},
		{"no CSRF token", root, "PUT", "/s3/refused-2", nil, 403},
		{"wrong CSRF token", root, "PUT", "/s3/refused-3", map[string]string{console.CSRFHeader: "forged"}, 403},
		{"another user's token", root, "PUT", "/s3/refused-4", map[string]string{console.CSRFHeader: alice.csrf}, 403},
		{"cross-origin", root, "PUT", "/s3/refused-5", map[string]string{console.CSRFHeader: root.csrf, "Origin": "http://evil.example"}, 403},
		{"no CSRF token: logout", root, "POST", "/api/logout", nil, 403},
		{"operations: not an admin", alice, "GET", "/api/admin/users", nil, 403},
		{"operations: metrics, not an admin", alice, "GET", "/api/metrics", nil, 403},
		{"operations: admin", root, "GET", "/api/admin/users", nil, 200},
		{"with the token", root, "PUT", "/s3/accepted", map[string]string{console.CSRFHeader: root.csrf, "Origin": base}, 200},
		{"the S3 API's rules: another user's bucket", alice, "PUT", "/s3/accepted/x", map[string]string{console.CSRFHeader: alice.csrf}, 403},
		{"the S3 API's rules: another user's usage", alice, "GET", "/api/usage?bucket=accepted", nil, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := tc.who.do(tc.method, tc.path, nil, tc.header)
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s: %s %s, want %d", tc.method, tc.path, resp.Status, body, tc.want)
			}
		})
	}
	// None of the refused requests made a bucket.
	out, err := srv.Client(5*time.Second).ListBuckets(t.Context(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, aws.ToString(b.Name))
	}
	if strings.Join(names, ",") != "accepted" {
		t.Errorf("buckets %v, want only the one created with the CSRF token", names)
	}
}

// TestConsoleCookieAndContent: the session cookie is HttpOnly,
// SameSite=Strict and expiring; object bytes come back sandboxed; a
// share link opens the object on the S3 endpoint without a session.
func TestConsoleCookieAndContent(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	base := "http://" + srv.ConsoleAddr
	accessKey, secretKey := srv.Keys()
	c := newClient(t, base)
	resp := c.login(accessKey, secretKey)
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == console.CookieName {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.MaxAge <= 0 || cookie.Expires.IsZero() {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Max-Age and Expires", cookie)
	}

	page := []byte("<html><script>document.title='ran'</script></html>")
	token := map[string]string{console.CSRFHeader: c.csrf}
	for _, step := range []struct {
		path string
		body []byte
	}{{"/s3/web", nil}, {"/s3/web/dir/../page.html", page}} {
		if resp, body := c.do("PUT", step.path, step.body, map[string]string{console.CSRFHeader: c.csrf, "Content-Type": "text/html"}); resp.StatusCode != 200 {
			t.Fatalf("PUT %s: %s %s", step.path, resp.Status, body)
		}
	}
	resp, body := c.do("GET", "/s3/web/dir/../page.html", nil, nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, page) {
		t.Fatalf("GET the key with '..': %s %q", resp.Status, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("object answer CSP %q, nosniff %q: want a sandbox and nosniff", csp, resp.Header.Get("X-Content-Type-Options"))
	}

	reqBody, _ := json.Marshal(map[string]any{"bucket": "web", "key": "dir/../page.html", "seconds": 600})
	resp, body = c.do("POST", "/api/presign", reqBody, token)
	var link struct{ URL string }
	if err := json.Unmarshal(body, &link); resp.StatusCode != 200 || err != nil || !strings.HasPrefix(link.URL, srv.Endpoint()+"/") {
		t.Fatalf("presign: %s %s", resp.Status, body)
	}
	shared, err := http.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(shared.Body)
	shared.Body.Close()
	if shared.StatusCode != 200 || !bytes.Equal(got, page) {
		t.Errorf("share link: %s %q, want the object", shared.Status, got)
	}

	// Logging out ends the session on the server, not only in the jar.
	if resp, _ := c.do("POST", "/api/logout", nil, token); resp.StatusCode != 200 {
		t.Fatalf("logout: %s", resp.Status)
	}
	replay := newClient(t, base)
	resp, _ = replay.do("GET", "/s3/", nil, map[string]string{"Cookie": console.CookieName + "=" + cookie.Value})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the cookie after logout: %s, want 401", resp.Status)
	}
}

// TestConsoleCluster: on b3 node, the console of a follower logs in, acts
// through the leader (its S3 requests take the node's forwarding path) and
// shows the replica group.
func TestConsoleCluster(t *testing.T) {
	cl := testutil.StartCluster(t, testutil.ClusterOptions{})
	accessKey, secretKey := cl.Keys()
	leader, err := cl.Leader(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % len(cl.Nodes)
	c := newClient(t, "http://"+cl.Nodes[follower].ConsoleAddr)
	if resp := c.login(accessKey, secretKey); resp.StatusCode != http.StatusOK {
		t.Fatalf("login on a follower's console: %s", resp.Status)
	}
	if resp, body := c.do("PUT", "/s3/from-follower", nil, map[string]string{console.CSRFHeader: c.csrf}); resp.StatusCode != 200 {
		t.Fatalf("create a bucket on a follower's console: %s %s", resp.Status, body)
	}
	if _, err := cl.Client(leader, 10*time.Second).HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: aws.String("from-follower")}); err != nil {
		t.Errorf("the bucket made on the follower's console, asked of the leader: %v", err)
	}
	// Whether a user is an admin the follower answers from the users it
	// applied: on a loaded machine it may apply the first leader's root
	// user a moment after the login (which the leader checked).
	var st struct {
		Leader  string
		Members []struct {
			ID      string
			Healthy bool
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, body := c.do("GET", "/api/admin/cluster", nil, nil)
		err := json.Unmarshal(body, &st)
		if resp.StatusCode == 200 && err == nil && len(st.Members) == 3 && st.Leader == cl.Nodes[leader].ID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster status on the console: %s %s (%v), want 3 members led by %s", resp.Status, body, err, cl.Nodes[leader].ID)
		}
	}

	// The Cluster page in Chromium: a row per member, the page checked
	// as every other one is (checkPage) at 1280 px.
	ctx, _ := newBrowser(t)
	failOnScriptErrors(t, ctx)
	shot, checkShots := screenshotter(t, ctx, clusterShots)
	consoleURL := "http://" + cl.Nodes[follower].ConsoleAddr + "/"
	do(t, ctx, "log in on the follower", login(consoleURL, accessKey, secretKey))
	do(t, ctx, "the cluster page", chromedp.Navigate(consoleURL+"#/cluster"),
		waitTrue(`document.querySelectorAll('#cluster tr[data-member]').length === 3`))
	healthy, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('#cluster tr[data-member]')].filter(tr => tr.textContent.includes('healthy')).length`))
	if err != nil || healthy != 3 {
		t.Errorf("the cluster page shows %d healthy members (%v), want 3", healthy, err)
	}
	checkPage(t, ctx, "cluster at 1280 px")
	shot("cluster")
	checkShots()
}

// TestConsoleClusterGroups: on a cluster of two groups, the Cluster page
// shows both, with the partitions each owns once the moves are done, and
// the page passes checkPage at 1280 px.
func TestConsoleClusterGroups(t *testing.T) {
	g1 := testutil.StartCluster(t, testutil.ClusterOptions{})
	testutil.StartCluster(t, testutil.ClusterOptions{FirstID: 3, Args: []string{"--group", "g2", "--cluster-seeds", g1.Nodes[0].ClusterAddr}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		st, err := g1.Status(0)
		if err == nil && st.Balanced && len(st.Groups) == 2 && st.Groups[1].Partitions > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the two groups did not balance: %+v, %v", st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	accessKey, secretKey := g1.Keys()
	bctx, _ := newBrowser(t)
	failOnScriptErrors(t, bctx)
	consoleURL := "http://" + g1.Nodes[1].ConsoleAddr + "/"
	do(t, bctx, "log in", login(consoleURL, accessKey, secretKey))
	do(t, bctx, "the cluster page with two groups", chromedp.Navigate(consoleURL+"#/cluster"),
		waitTrue(`document.querySelectorAll('#groups tr[data-group]').length === 2 && document.querySelector('#map-state').textContent.includes('balanced')`))
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#groups tr[data-group]')].map(tr => [...tr.children].map(td => td.textContent).join('|'))`))
	if err != nil || len(rows) != 2 || !strings.HasPrefix(rows[0], "g1|512|512|") || !strings.HasPrefix(rows[1], "g2|512|512|") || !strings.HasSuffix(rows[1], "|3|3|") {
		t.Errorf("the groups shown: %q (%v), want g1 and g2 owning 512 each, 3 healthy members", rows, err)
	}
	checkPage(t, bctx, "cluster with two groups at 1280 px")
}

// TestConsoleAdminAudit: an admin change made through the console is
// logged under the user who made it, not as an unknown actor.
func TestConsoleAdminAudit(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	accessKey, secretKey := srv.Keys()
	root := newClient(t, "http://"+srv.ConsoleAddr)
	if resp := root.login(accessKey, secretKey); resp.StatusCode != http.StatusOK {
		t.Fatalf("root login: %s", resp.Status)
	}
	resp, body := root.do("POST", "/api/admin/users", []byte(`{"name":"audited"}`), map[string]string{console.CSRFHeader: root.csrf, "Content-Type": "application/json"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("add a user through the console: %s %s", resp.Status, body)
	}
	testutil.WaitFor(t, "the audit line naming the console's user", func() bool {
		return strings.Contains(srv.Proc.Output.String(), "actor=console:"+accessKey)
	})
}
