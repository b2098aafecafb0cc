package cluster_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestNodeStartAndStop: a node whose port is taken exits with an error
// naming that port and leaves its data directory untouched (not
// bootstrapped), whichever of its four ports it is; with the ports free
// the same command starts and bootstraps the directory; SIGTERM then
// stops it with "shut down cleanly" and no error from raft.
func TestNodeStartAndStop(t *testing.T) {
	bin := testutil.Binary(t)
	data := filepath.Join(t.TempDir(), "n1")
	ports := map[string]string{
		"--address": testutil.FreeAddr(t), "--cluster-address": testutil.FreeAddr(t),
		"--admin-address": testutil.FreeAddr(t), "--console-address": testutil.FreeAddr(t),
	}
	args := []string{"node", "--id", "n1", "--peers", "n1=" + ports["--cluster-address"], "--data", data, "--drain-delay", "0s"}
	for flag, addr := range ports {
		args = append(args, flag, addr)
	}
	env := []string{"B3_ACCESS_KEY=TESTACCESSKEY0000000", "B3_SECRET_KEY=test/secret/key/000000000000000000000000",
		"B3_ADMIN_TOKEN=test-admin-token", "B3_CLUSTER_SECRET=" + testutil.TestClusterSecret}

	for _, flag := range []string{"--address", "--cluster-address", "--admin-address", "--console-address"} {
		t.Run(strings.TrimPrefix(flag, "--"), func(t *testing.T) {
			taken, err := net.Listen("tcp", ports[flag])
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			p, err := testutil.Start("b3 node", bin, args, env)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Wait(30 * time.Second)
			if err == nil || !p.Exited() {
				p.Kill()
				t.Fatalf("with %s %s taken the node did not fail: %v\n%s", flag, ports[flag], err, p.Output.String())
			}
			out := p.Output.String()
			if !strings.Contains(out, ports[flag]) || !strings.Contains(out, "address already in use") {
				t.Errorf("with %s %s taken the node says:\n%s\nwant the address and \"address already in use\"", flag, ports[flag], out)
			}
			if entries, err := os.ReadDir(data); err == nil && len(entries) > 0 {
				t.Errorf("a node that could not bind left %d entries in its data directory (%v)", len(entries), entries[0].Name())
			}
		})
	}

	p, err := testutil.Start("b3 node", bin, args, env)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the node's banner", func() bool { return strings.Contains(p.Output.String(), "b3 node n1: S3 API on") || p.Exited() })
	if p.Exited() {
		t.Fatalf("with every port free the node did not start:\n%s", p.Output.String())
	}
	for _, name := range []string{"cluster.json", "raft"} {
		if _, err := os.Stat(filepath.Join(data, name)); err != nil {
			t.Errorf("the started node's data directory has no %s: %v", name, err)
		}
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Output.String())
	}
	out := p.Output.String()
	if !strings.Contains(out, "shut down cleanly") || strings.Contains(out, "[ERROR]") {
		t.Errorf("a clean stop logged no \"shut down cleanly\", or an error:\n%s", out)
	}
}
