// Package cluster runs `b3 node`: one member of a replica group whose
// members each hold a full copy of the objects, kept in step by Raft
// (hashicorp/raft). Consensus — elections, terms, commit, the log — is the
// library's; this package decides what goes into the log, how object
// bytes travel beside it, and how a command becomes objstore calls.
//
// # Layers
//
//	s3api.Server ──▶ Store (Backend)      leader only: decides each write,
//	                   │                  stages its bytes, proposes a command
//	                   ▼
//	             raft.Raft ── log ──▶ fsm  every node: applies commands in
//	                                   │   log order through objstore's
//	                                   ▼   Apply* functions
//	                             objstore.Store (meta + blob, this node's)
//
// objstore knows nothing of Raft: it stages bytes (Stage) and applies
// records decided elsewhere (Apply*), stamping each batch with the
// command's log index.
//
// # One PUT (sync mode)
//
//	client ─PUT─▶ any node ──(not leader: reverse proxy, streaming)──▶ leader
//	leader: version = term<<32|n; stage the body in own segments while
//	    streaming it ─PUT /_b3/v1/stage─▶ followers: stage in their
//	    segments, fsync, 200 (stream.go)
//	leader: fsync; ETag and checksums checked; waits for a majority
//	    (itself + 1 of 2) to hold the bytes
//	leader: raft.Apply({put bucket/key version attrs stage-id}) ─▶ commit on a majority
//	every node's fsm: take the staged bytes by stage id (or fetch them from
//	    a peer: GET /_b3/v1/bytes), install the record (one meta batch with
//	    the log index)
//	leader: 200 to the client once its own fsm applied the command
//
// Members are added (as non-voters, promoted once caught up) and removed
// with Raft configuration changes (membership.go).
//
// Snapshots (snapshot.go) hold the records at one log index, not the
// bytes: a node that restores one installs the records at once, those
// whose bytes it lacks hollow, and fetches those bytes from a peer
// afterwards, outside raft (fill.go), as for a command whose bytes it
// missed.
//
// Objects up to --inline-max ride inside the command and are kept inline
// in their record; nothing travels beside the log for them. Raft hands
// the fsm the commands committed together; consecutive such puts to one
// bucket, each of another key, install in one meta batch stamped with the
// last one's index (fsm.ApplyBatch).
//
// # Invariants
//
//   - A command carries the outcome the leader decided (version, times,
//     upload ID, attributes) and never a rule that reads a clock or a
//     counter: every node that applies the same log holds the same
//     records. Extents are each node's own and never in a command.
//   - Ids (versions, stage ids) are term<<32 | counter, allocated only by a
//     node that leads in that term and has applied everything committed
//     before it (a barrier); one node leads per term, so ids never repeat.
//   - In sync mode a write's bytes are durable on a majority of the
//     voters before its command is proposed, and the command is committed
//     on a majority before the write is acknowledged: any surviving majority holds the
//     command and at least one copy of the bytes. A node that applies a
//     command without the bytes fetches them from a peer before it
//     installs the record: a record never references bytes the node lacks.
//     A record restored from a snapshot may be hollow (it references no
//     bytes, and says so) until the filler or a read fetches them.
//   - An apply waits for a command's bytes until a peer gives them or a
//     committed declaration says they are lost (async mode, the leader
//     died with them): it then installs the record hollow, and the
//     declaration, later in the log, removes that version on every node
//     (lost.go). The declaration is an ordinary command, proposed by the
//     leader whose own apply waits for those bytes.
//   - A peer answers a fetch with "gone" only once it has applied the log
//     past the command and no longer holds those bytes: a later command
//     removed that version, and the asker installs the record hollow
//     (the same record as every node's, until that command removes it).
//   - Every store change commits together with its log index (a batch of
//     small puts with the last one's: all of them or none); after a
//     restart commands at or below the stored index are skipped, so none
//     is applied twice. Those commits do not wait for a sync: the Raft log
//     holds the commands durably, and a crash that loses a commit loses
//     its index with it, so the command is applied again. (Object bytes
//     are not in the log: they are synced when staged.)
//   - Only the leader serves S3, after a barrier in its term; reads first
//     confirm leadership (VerifyLeader). Other nodes forward, once, on a
//     connection whose handler is the S3 API alone (forward.go): a
//     client's request never reaches a node-to-node endpoint, and a
//     forwarded request reaching a non-leader gets 503 SlowDown.
//   - Every connection to the cluster port passes a mutual challenge on
//     the cluster secret before a byte of Raft or HTTP (auth.go); with
//     --cluster-tls-* it is mutual TLS 1.3 first, and every byte after
//     the TCP handshake is encrypted (peertls.go). Every dial to a peer
//     goes through DialPeer.
//   - Damaged bytes (found by a node's scrub, or met by a read on the
//     leader) are fetched again from a peer and swapped in for the damaged
//     extents on that node alone, outside the log: only where the node
//     keeps a version's bytes changes, never its record (scrub.go). A read
//     never returns damaged bytes: it repairs and goes on, or fails.
//   - Lifecycle expiry is decided by the leader alone and applied as
//     expire commands naming the version found due (lifecycle.go).
//   - Versioned writes carry the leader's decisions (marker versions, the
//     Object Lock check's instant); what depends on a bucket's versioning
//     state is read by the apply from the replicated bucket record
//     (versioning.go).
//
// # Several groups
//
// A cluster may have several groups, each owning partitions of the key
// space (package partition). The first group's log keeps the cluster map
// (cmap.go) and the catalogue of buckets and users, which every other
// group copies into its own log (catalog.go); every node and router
// routes a request to the leader of the group that owns it (route.go,
// router.go); listings merge the groups' pages (list.go); partitions
// move between groups by themselves (move.go).
//
// # Not done (see docs/CLUSTER.md)
//
// A background I/O budget for the pushes and for moves (fetches use the
// background class); see docs/CLUSTER.md for the rest.
package cluster
