# Shared by the scripts in scripts/perf: build b3, start and stop servers,
# drop the page cache. Sourced, not run. Every wait is bounded.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Credentials every server under test gets (MinIO wants >= 8 characters).
access_key=${ACCESS_KEY:-b3perfaccess}
secret_key=${SECRET_KEY:-b3perfsecret0123456789}

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# build_b3 DIR: builds ./cmd/b3 into DIR/b3 unless B3_BIN names a binary.
build_b3() {
	if [ -n "${B3_BIN:-}" ]; then
		[ -x "$B3_BIN" ] || die "B3_BIN=$B3_BIN is not executable"
		return
	fi
	log "building b3"
	(cd "$repo" && timeout 600 go build -o "$1/b3" ./cmd/b3) || die "go build failed"
	B3_BIN=$1/b3
}

# cpu_seconds PID: user + system CPU time the process has used so far.
cpu_seconds() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# begin_run DIR: builds b3 (build_b3 DIR), stops the server on exit, and
# prints the first lines of a run.txt: start time, host, b3.
begin_run() {
	build_b3 "$1"
	trap 'stop_server' EXIT
	trap 'log interrupted; exit 130' INT TERM
	echo "started: $(date -Is)"
	echo "host: $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	echo "b3: $B3_BIN ($(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown))"
}

# free_port prints a TCP port nothing listens on (the kernel picks it).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_http URL SECONDS: until URL answers any HTTP status, or fail.
wait_http() {
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		if curl -s -o /dev/null -m 2 "$1"; then return 0; fi
		if ! kill -0 "$server_pid" 2>/dev/null; then return 1; fi
		sleep 0.2
	done
	return 1
}

# drop_caches writes dirty pages back and empties the page cache, so the
# next phase reads from the disk (needs root; otherwise says so).
drop_caches() {
	sync
	if echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
		log "page cache dropped"
	else
		log "note: cannot drop the page cache (not root); later reads may come from memory"
	fi
}

# start_server NAME DATADIR LOGFILE: starts b3 or minio on a free port with
# a fresh DATADIR; sets server_pid and endpoint. b3 runs SERVER_BIN
# (default B3_BIN) with the extra flags in the array SERVER_ARGS.
start_server() {
	local name=$1 data=$2 logfile=$3 port
	rm -rf "$data" && mkdir -p "$data"
	port=$(free_port)
	endpoint=http://127.0.0.1:$port
	case $name in
	b3)
		# The admin listener (metrics, pprof) defaults to port 9001, which
		# another b3 on the machine may hold: give it a free port too.
		local admin=()
		local bin=${SERVER_BIN:-$B3_BIN}
		# (server -h exits 2: under pipefail a pipe into grep would fail.)
		if [[ $("$bin" server -h 2>&1) == *-admin-address* ]]; then
			admin_address=127.0.0.1:$(free_port)
			admin=(--admin-address "$admin_address")
		fi
		# No web console (its default port would collide between runs);
		# through the environment, which older binaries ignore.
		B3_CONSOLE_ADDRESS="" "$bin" server --address "127.0.0.1:$port" --data "$data" "${admin[@]}" \
			--access-key "$access_key" --secret-key "$secret_key" --log-level warn "${SERVER_ARGS[@]}" >"$logfile" 2>&1 &
		;;
	minio)
		[ -x "$MINIO_BIN" ] || die "no MinIO at $MINIO_BIN: cd /tmp && GOBIN=/tmp/minio-bin go install github.com/minio/minio@latest"
		MINIO_ROOT_USER=$access_key MINIO_ROOT_PASSWORD=$secret_key MINIO_BROWSER=off \
			MINIO_UPDATE=off MINIO_CALLHOME_ENABLE=off \
			"$MINIO_BIN" server --quiet --address "127.0.0.1:$port" \
			--console-address "127.0.0.1:$(free_port)" "$data" >"$logfile" 2>&1 &
		;;
	*) die "unknown server $name" ;;
	esac
	server_pid=$!
	if ! wait_http "$endpoint" 60; then
		tail -20 "$logfile" >&2
		stop_server
		die "$name did not come up on $endpoint"
	fi
	log "$name up on $endpoint (pid $server_pid, data $data)"
}

# stop_server: SIGTERM, then SIGKILL after 45 s (b3 drains for up to 30 s).
stop_server() {
	[ -n "${server_pid:-}" ] || return 0
	kill -TERM "$server_pid" 2>/dev/null || true
	local deadline=$((SECONDS + 45))
	while kill -0 "$server_pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	if kill -0 "$server_pid" 2>/dev/null; then
		log "server $server_pid ignored SIGTERM for 45 s: killing it"
		kill -KILL "$server_pid" 2>/dev/null || true
	fi
	wait "$server_pid" 2>/dev/null || true
	server_pid=
}

# bench LIMIT ARGS...: runs `b3 bench ARGS`, stopped by SIGINT after LIMIT
# seconds (the partial report is still written), SIGKILL 60 s later.
bench() {
	local limit=$1
	shift
	timeout --signal=INT --kill-after=60 "$limit" "$B3_BIN" bench "$@"
	local rc=$?
	case $rc in
	0) ;;
	124 | 130) log "note: b3 bench $1 hit its ${limit}s limit; partial results kept" ;;
	*) log "warning: b3 bench $1 exited $rc" ;;
	esac
	return 0
}

# latest DIR KIND: the newest KIND-*.json report in DIR.
latest() { ls -t "$1/$2"-*.json 2>/dev/null | grep -v -- '-series' | head -1; }

# mount_b3 BIN ENDPOINT BUCKET DIR LOG: runs `BIN mount` of BUCKET on DIR in
# the background (its output in LOG), sets mount_pid and waits until DIR is
# mounted, or fails.
mount_b3() {
	"$1" mount --endpoint "$2" "$3" "$4" >"$5" 2>&1 &
	mount_pid=$!
	for _ in $(seq 200); do
		grep -q " $4 " /proc/mounts && return 0
		sleep 0.1
	done
	cat "$5" >&2
	die "mount on $4 did not come up"
}

# unmount_b3 DIR: unmounts DIR and waits for mount_pid to exit.
unmount_b3() {
	fusermount3 -u "$1" || { sleep 2; fusermount3 -u -z "$1"; }
	wait "$mount_pid" 2>/dev/null || true
	mount_pid=""
}

# stop_mount DIR: for an EXIT trap: kills the mount started by mount_b3, if
# one runs, and detaches DIR.
stop_mount() {
	[ -n "${mount_pid:-}" ] && kill "$mount_pid" 2>/dev/null || true
	fusermount3 -u -z "$1" 2>/dev/null || true
}

# cpu_ticks PID...: the user + system clock ticks of each process
# (space-separated; 0 for one that is gone).
cpu_ticks() {
	local pid out=()
	for pid in "$@"; do
		out+=("$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)")
	done
	echo "${out[*]}"
}

# print_medians RESULTS: the median of each numeric column of a TSV of
# "round binary measure value..." rows, per measure and binary ("load"
# rows and rows with a "fail" left out; "-" counts as 0), a line each:
# the first value with %g, the others with %.3f, then the number of runs.
print_medians() {
	python3 - "$1" <<'PY'
import sys, statistics, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if f[2] == "load" or "fail" in f:
        continue
    v[(f[2], f[1])].append([float(x) if x != "-" else 0.0 for x in f[3:]])
for (m, b), rows in sorted(v.items()):
    med = [statistics.median(c) for c in zip(*rows)]
    print("\t".join([m, b, "%g" % med[0]] + ["%.3f" % x for x in med[1:]] + ["(%d runs)" % len(rows)]))
PY
}

# The 3-node cluster of cluster.sh and restart-scan.sh.
node_pids=()
stop_cluster() {
	for pid in "${node_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${node_pids[@]}"; do
		local deadline=$((SECONDS + 45))
		while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	node_pids=()
}
# start_cluster DIR [TLS]: three nodes on free ports (TLS=1: with
# --cluster-tls-*), logging to $out/node-nI.log at NODE_LOG_LEVEL [warn];
# sets leader, endpoint (the leader's S3 endpoint, or a follower's with
# FORWARD=1), node_pids and the S3, cluster and admin addresses s3, cl,
# adm.
start_cluster() {
	local dir=$1 tls=${2:-0} peers="" i
	rm -rf "$dir" && mkdir -p "$dir"
	cluster_dir=$dir s3=() cl=() adm=() node_pids=()
	for i in 1 2 3; do
		s3+=("127.0.0.1:$(free_port)") cl+=("127.0.0.1:$(free_port)") adm+=("127.0.0.1:$(free_port)")
		peers+="${peers:+,}n$i=${cl[$((i - 1))]}"
	done
	# No web consoles: three nodes would share its default port (older
	# binaries have no such flag).
	console=()
	# (The help text is read whole first: with pipefail, grep -q closing the
	# pipe early would fail the test at random.)
	local help
	help=$("$B3_BIN" node --help 2>&1 || true)
	if grep -q -- -console-address <<<"$help"; then console=(--console-address ""); fi
	cluster_tls=$tls cluster_peers=$peers
	if [ "$tls" = 1 ]; then
		"$B3_BIN" node certs --out "$dir/certs" --nodes "$peers" >/dev/null || die "b3 node certs failed (a binary without cluster TLS?)"
	fi
	for i in 1 2 3; do start_node "$i"; done
	local deadline=$((SECONDS + 60))
	leader=""
	while [ $SECONDS -lt $deadline ]; do
		leader=$("$B3_BIN" admin --endpoint "http://${adm[0]}" --token bench-admin-token-000 cluster status --json 2>/dev/null |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])' 2>/dev/null)
		[ -n "$leader" ] && break
		sleep 0.5
	done
	[ -n "$leader" ] || die "the cluster elected no leader"
	i=${leader#n}
	if [ "${FORWARD:-0}" = 1 ]; then i=$((i % 3 + 1)); fi
	endpoint=http://${s3[$((i - 1))]}
	# The root user is applied once the leader is ready.
	deadline=$((SECONDS + 30))
	until AWS_ACCESS_KEY_ID=$access_key AWS_SECRET_ACCESS_KEY=$secret_key "$B3_BIN" bench peak --endpoint "$endpoint" \
		--access-key "$access_key" --secret-key "$secret_key" --bucket b3-warm --sizes 1KiB --concurrency 1 \
		--ops upload --duration 200ms --charts=false --out "$out/warm" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || die "the cluster does not serve S3"
		sleep 0.5
	done
	log "cluster up (TLS=$tls): leader $leader, benchmarking through $endpoint"
}

# start_node I: (re)starts node nI of the cluster start_cluster made, on
# its data directory and addresses.
start_node() {
	local i=$1 certs=()
	if [ "$cluster_tls" = 1 ]; then
		certs=(--cluster-tls-cert "$cluster_dir/certs/n$i.pem" --cluster-tls-key "$cluster_dir/certs/n$i-key.pem" --cluster-tls-ca "$cluster_dir/certs/ca.pem")
	fi
	B3_ACCESS_KEY=$access_key B3_SECRET_KEY=$secret_key B3_ADMIN_TOKEN=bench-admin-token-000 B3_CLUSTER_SECRET=bench-cluster-secret \
		"$B3_BIN" node --id "n$i" --data "$cluster_dir/n$i" --address "${s3[$((i - 1))]}" \
		--cluster-address "${cl[$((i - 1))]}" --peers "$cluster_peers" --admin-address "${adm[$((i - 1))]}" \
		"${console[@]}" "${certs[@]}" --log-level "${NODE_LOG_LEVEL:-warn}" >>"$out/node-n$i.log" 2>&1 &
	node_pids[$((i - 1))]=$!
}
