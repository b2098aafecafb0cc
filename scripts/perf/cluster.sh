#!/usr/bin/env bash
# A 3-node b3 cluster (sync replication, all nodes on this machine) against
# one b3 server, the same `b3 bench peak` upload cells against each, one
# target at a time on fresh data directories:
#   4 KiB x c16, c64;  1 MiB x c16;  64 MiB x c4;  10 s per cell.
# The cluster is benchmarked through its leader's endpoint (FORWARD=1: a
# follower's, adding the forwarding hop). Summaries go to OUT/*.txt.
#
#   scripts/perf/cluster.sh [OUT]      (default /tmp/b3-perf/cluster-<time>)
#
# Environment: B3_BIN [built from this checkout], WORK [/tmp/b3-perf],
# DURATION [10s], ROUNDS [1] (alternate single and cluster ROUNDS times),
# CELLS [the four above, ";"-separated `b3 bench peak` arguments, e.g.
# "--sizes 4KiB --concurrency 16;--sizes 4KiB --concurrency 64"],
# TARGETS ["single cluster"]. After each cell the summary gets a line
# "cpu_ticks" with the user+system clock ticks (1/100 s) each server or
# node process used during it (from /proc/PID/stat), in the order n1 n2 n3
# (the cell's own cleanup included: b3 bench deletes what it uploaded).
set -uo pipefail
source "$(dirname "$0")/lib.sh"

work=${WORK:-/tmp/b3-perf}
out=${1:-$work/cluster-$(date +%Y%m%d-%H%M%S)}
duration=${DURATION:-10s}
rounds=${ROUNDS:-1}
mkdir -p "$out" "$work" || die "cannot create $out"
build_b3 "$work"

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
trap 'stop_server; stop_cluster' EXIT
trap 'log interrupted; exit 130' INT TERM

# start_cluster DIR: three nodes on free ports; sets endpoint to the
# leader's S3 endpoint (or a follower's with FORWARD=1).
start_cluster() {
	local dir=$1 peers="" i
	rm -rf "$dir" && mkdir -p "$dir"
	local s3=() cl=() adm=()
	for i in 1 2 3; do
		s3+=("127.0.0.1:$(free_port)") cl+=("127.0.0.1:$(free_port)") adm+=("127.0.0.1:$(free_port)")
		peers+="${peers:+,}n$i=${cl[$((i - 1))]}"
	done
	# No web consoles: three nodes would share its default port (older
	# binaries have no such flag).
	local console=()
	# (The help text is read whole first: with pipefail, grep -q closing the
	# pipe early would fail the test at random.)
	local help
	help=$("$B3_BIN" node --help 2>&1 || true)
	if grep -q -- -console-address <<<"$help"; then console=(--console-address ""); fi
	for i in 1 2 3; do
		B3_ACCESS_KEY=$access_key B3_SECRET_KEY=$secret_key B3_ADMIN_TOKEN=bench B3_CLUSTER_SECRET=bench-cluster-secret \
			"$B3_BIN" node --id "n$i" --data "$dir/n$i" --address "${s3[$((i - 1))]}" \
			--cluster-address "${cl[$((i - 1))]}" --peers "$peers" --admin-address "${adm[$((i - 1))]}" \
			"${console[@]}" --log-level warn >"$out/node-n$i.log" 2>&1 &
		node_pids+=($!)
	done
	local deadline=$((SECONDS + 60)) leader=""
	while [ $SECONDS -lt $deadline ]; do
		leader=$("$B3_BIN" admin --endpoint "http://${adm[0]}" --token bench cluster status --json 2>/dev/null |
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
	log "cluster up: leader $leader, benchmarking through $endpoint"
}

cells=("--sizes 4KiB --concurrency 16,64" "--sizes 1MiB --concurrency 16" "--sizes 64MiB --concurrency 4")
if [ -n "${CELLS:-}" ]; then IFS=';' read -ra cells <<<"$CELLS"; fi

# cpu_ticks PID...: user+system clock ticks each process has used so far.
cpu_ticks() {
	local pid
	for pid in "$@"; do awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0; done | paste -sd' '
}
{
	echo "started: $(date -Is)"
	echo "host: $(uname -srm), $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "b3: $B3_BIN ($(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown))"
} >"$out/run.txt"
for round in $(seq "$rounds"); do
	for target in ${TARGETS:-single cluster}; do
		drop_caches
		if [ $target = single ]; then
			start_server b3 "$work/data-single" "$out/single-server.log"
		else
			start_cluster "$work/data-cluster"
		fi
		pids=("${node_pids[@]}")
		if [ $target = single ]; then pids=("$server_pid"); fi
		for cell in "${cells[@]}"; do
			log "$target round $round: $cell"
			read -ra before <<<"$(cpu_ticks "${pids[@]}")"
			# shellcheck disable=SC2086 # the cell's arguments are meant to split
			bench 300 peak --endpoint "$endpoint" --access-key "$access_key" --secret-key "$secret_key" \
				--bucket b3-perf --ops upload --duration "$duration" --charts=false $cell \
				--out "$out/$target-$round" >>"$out/$target-$round.txt"
			read -ra after <<<"$(cpu_ticks "${pids[@]}")"
			ticks=()
			for i in "${!after[@]}"; do ticks+=($((after[i] - before[i]))); done
			echo "cpu_ticks ($cell; load $(cut -d' ' -f1 /proc/loadavg)): ${ticks[*]}" >>"$out/$target-$round.txt"
		done
		if [ $target = single ]; then stop_server; else stop_cluster; fi
	done
done
log "done: $out"
