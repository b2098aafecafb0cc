package cluster_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/b3-storage/b3/internal/cluster"
)

// routerKeyBoundaries: a router proves the router key, not the cluster
// secret (docs/CLUSTER.md, "Authentication between nodes"); with it a
// process reads the map and nodes' info and nothing else on the
// node-to-node side — no fence or switch of a move (which, on a
// secret holder's word, ends a move the destination has not copied:
// acknowledged objects lost), no records, bytes, users, reads or
// deletions — and cannot speak Raft. Run by TestAttackGroupsBoundaries.
func routerKeyBoundaries(ctx context.Context, t *testing.T, tg *twoGroups) {
	key := []byte(tg.g1.RouterKey())
	do := func(addr, method, path, body string) int {
		conn, err := cluster.DialRouter(ctx, addr, key, nil, 'H')
		if err != nil {
			t.Fatalf("a router's connection to %s: %v", addr, err)
		}
		code, _ := peerRequest(t, conn, addr, method, path, nil, body)
		return code
	}
	for _, n := range append(tg.g1.Nodes, tg.g2.Nodes...) {
		if code := do(n.ClusterAddr, "GET", "/_b3/v1/cluster/map?after=0", ""); code != http.StatusOK {
			t.Fatalf("the map with the router key from %s: %d, want 200", n.ID, code)
		}
		if code := do(n.ClusterAddr, "GET", "/_b3/v1/info", ""); code != http.StatusOK {
			t.Fatalf("info with the router key from %s: %d, want 200", n.ID, code)
		}
		for _, rq := range []struct{ method, path, body string }{
			{"POST", "/_b3/v1/cluster/move", `{"op":"fence","to":"g2","partitions":[1]}`},
			{"POST", "/_b3/v1/cluster/move", `{"op":"switch","to":"g2","partitions":[1]}`},
			{"POST", "/_b3/v1/move/fence?epoch=1", ""},
			{"GET", "/_b3/v1/move/records?to=g2&partitions=1", ""},
			{"GET", "/_b3/v1/bytes?bucket=b&key=k&version=1", ""},
			{"POST", "/_b3/v1/users", `{"name":"mallory"}`},
			{"POST", "/_b3/v1/cluster/groups", `{}`},
			{"GET", "/_b3/v1/cluster/catalog", ""},
			{"POST", "/_b3/v1/read", `{"op":"head","bucket":"b","key":"k"}`},
			{"POST", "/_b3/v1/delete", `{"bucket":"b","key":"k"}`},
			{"GET", "/_b3/v1/usage", ""},
			{"POST", "/_b3/v1/list", `{}`},
			{"PUT", "/_b3/v1/stage", "x"},
		} {
			if code := do(n.ClusterAddr, rq.method, rq.path, rq.body); code != http.StatusNotFound {
				t.Fatalf("%s %s with the router key on %s: %d, want 404 (not served to routers)", rq.method, rq.path, n.ID, code)
			}
		}
		if conn, err := cluster.DialRouter(ctx, n.ClusterAddr, key, nil, 0x01); err == nil {
			// The listener closes it unanswered: a router speaks no Raft.
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := conn.Read(make([]byte, 1))
			conn.Close()
			if err == nil {
				t.Fatalf("%s answered Raft on a router's connection", n.ID)
			}
		}
		if _, err := cluster.DialRouter(ctx, n.ClusterAddr, []byte("not-the-router-key-000000000000"), nil, 'H'); err == nil {
			t.Fatalf("%s took a wrong router key", n.ID)
		}
	}
}
