package cluster

import (
	"fmt"
	"net/http"

	"github.com/b3-storage/b3/internal/console"
	"github.com/b3-storage/b3/internal/server"
)

// startConsole serves the web console on --console-address ("": none).
// Its S3 requests go through s3 (this node's client handler: served here
// when leading, forwarded to the leader otherwise); its operations pages
// through admin (nil without an admin token: no operations pages).
func (n *Node) startConsole(s3 http.Handler, admin http.Handler, s3Addr string) (*http.Server, error) {
	if n.cfg.ConsoleAddress == "" {
		return nil, nil
	}
	ln, err := console.Listen(n.cfg.ConsoleAddress, n.cfg.ConsoleTLS)
	if err != nil {
		return nil, fmt.Errorf("listen on --console-address %s: %w", n.cfg.ConsoleAddress, err)
	}
	token := n.cfg.AdminToken
	if token == "" && n.cfg.LoadAdminToken != nil {
		token, _ = n.cfg.LoadAdminToken(n.cfg.Root)
	}
	c := console.New(console.Config{
		S3: s3, Region: n.cfg.Region, S3Endpoint: "http://" + s3Addr,
		Admin: admin, AdminToken: token, IsAdmin: n.users.isRoot, Cluster: admin != nil,
		Metrics: n.registry, Usage: server.BucketUsage(n.store), Logger: n.log,
	})
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		c.Run(n.closing)
	}()
	srv := console.NewHTTPServer(c, n.log)
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// isRoot reports whether accessKey is the cluster's root user.
func (u *userState) isRoot(accessKey string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.users[accessKey].Root
}
