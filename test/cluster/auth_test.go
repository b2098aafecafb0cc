package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/cluster"
	"github.com/b3-storage/b3/internal/testutil"
)

// TestClusterAuth: the cluster port answers only members holding the
// cluster secret. Raw connections speaking HTTP (an info, fetch or
// forwarded S3 request) or Raft without the handshake, or with the wrong
// secret, are closed unanswered; a node started with another secret
// cannot join the group, and joins once it has the right one.
func TestClusterAuth(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	cl := clients(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const bucket = "private"
	if err := createBucket(ctx, cl[0], bucket); err != nil {
		t.Fatal(err)
	}
	body := randomBytes(3, 100<<10)
	if _, err := cl[0].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addr := c.Nodes[leader].ClusterAddr
	ak, _ := c.Keys()
	requests := map[string]string{
		"info":    "GET /_b3/v1/info HTTP/1.1\r\nHost: x\r\n\r\n",
		"fetch":   "GET /_b3/v1/bytes?bucket=" + bucket + "&key=k&version=0&index=1 HTTP/1.1\r\nHost: x\r\n\r\n",
		"forward": "GET /" + bucket + "/k HTTP/1.1\r\nHost: x\r\nAuthorization: AWS4-HMAC-SHA256 Credential=" + ak + "/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00\r\n\r\n",
		"stage":   "PUT /_b3/v1/stage?stage=1&bucket=" + bucket + "&key=x&version=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		"users":   "POST /_b3/v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
		"raft":    "\x01" + strings.Repeat("\x00", 64), // an AppendEntries header, as Raft would send it first
		"magic":   "b3c1" + strings.Repeat("\x00", 32) + strings.Repeat("\x00", 33),
	}
	for name, req := range requests {
		t.Run("raw "+name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(conn)
			// The handshake's own answer (a nonce and a proof) may come
			// back to the "magic" opener; nothing of HTTP or Raft may.
			if bytes.Contains(got, []byte("HTTP/")) || (name != "magic" && len(got) > 0) || (name == "magic" && len(got) > 64) {
				t.Fatalf("the node answered %q (%v)", got, err)
			}
			if err != nil {
				t.Fatalf("the connection did not end: %v", err)
			}
		})
	}

	// The handshake with the secret opens the HTTP side; with another
	// secret it fails, on the dialer's side too.
	if _, err := cluster.DialPeer(ctx, addr, []byte("not-the-cluster-secret"), nil, 'H'); err == nil {
		t.Fatal("a dialer with the wrong secret was let in")
	}
	conn, err := cluster.DialPeer(ctx, addr, []byte(testutil.TestClusterSecret), nil, 'H')
	if err != nil {
		t.Fatalf("a dialer with the cluster secret: %v", err)
	}
	if _, err := io.WriteString(conn, "GET /_b3/v1/info HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("info over an authenticated connection: %v %v", resp, err)
	}
	conn.Close()

	// A node restarted with another secret cannot rejoin: the group goes
	// on without it and it applies nothing new.
	other := (leader + 1) % 3
	c.Kill(other)
	c.Secrets[other] = "another-secret-of-16+chars"
	if err := c.Start(other); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := cl[leader].PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("w%d", i)), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // give it the chance it must not take
	st, err := c.Status(leader)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		if m.ID == c.Nodes[other].ID && m.Healthy {
			t.Fatalf("the leader reaches %s, started with another secret: %+v", m.ID, m)
		}
	}
	own, err := c.Status(other)
	if err != nil {
		t.Fatal(err)
	}
	if own.Leader != "" {
		t.Fatalf("%s, started with another secret, follows leader %q", c.Nodes[other].ID, own.Leader)
	}
	if out := c.Nodes[leader].Proc.Output.String(); !strings.Contains(out, "failed authentication") {
		t.Fatalf("%s does not say why it cannot reach %s:\n%s", c.Nodes[leader].ID, c.Nodes[other].ID, out)
	}

	// With the secret again it catches up.
	c.Kill(other)
	c.Secrets[other] = testutil.TestClusterSecret
	if err := c.Start(other); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
}
