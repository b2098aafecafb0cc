package cluster

import (
	"net"
	"net/http"

	"github.com/b3-storage/b3/internal/authlimit"
	"github.com/b3-storage/b3/internal/console"
	"github.com/b3-storage/b3/internal/server"
)

// startConsole serves the web console on ln (nil: none). Its S3 requests
// go through s3 (this node's client handler: served here when leading,
// forwarded to the leader otherwise); its operations pages through admin
// (nil without an admin token: no operations pages).
func (n *Node) startConsole(ln net.Listener, s3 http.Handler, admin http.Handler, s3URL string) *http.Server {
	if ln == nil {
		return nil
	}
	token := n.cfg.AdminToken
	if token == "" && n.cfg.LoadAdminToken != nil {
		token, _ = n.cfg.LoadAdminToken(n.cfg.Root)
	}
	c := console.New(console.Config{
		S3: s3, Region: n.cfg.Region, S3Endpoint: s3URL,
		Admin: admin, AdminToken: token, IsAdmin: n.users.isRoot, Cluster: admin != nil,
		Metrics: n.registry, Usage: server.BucketUsage(n.store), Logger: n.log,
		Logins: authlimit.New(server.AuthLimits(n.cfg.AuthBackOff)),
	})
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		c.Run(n.closing)
	}()
	srv := console.NewHTTPServer(c, n.log)
	go func() { _ = srv.Serve(ln) }()
	return srv
}

// isRoot reports whether accessKey is the cluster's root user.
func (u *userState) isRoot(accessKey string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.users[accessKey].Root
}
