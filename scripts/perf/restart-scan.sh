#!/usr/bin/env bash
# A follower killed (SIGKILL) under an upload load, restarted at once:
# how long its scan for staged bytes takes (background I/O beside raft,
# internal/cluster/recover.go) and how soon the node serves again. Three
# sync nodes on this machine; `b3 bench peak` uploads through the leader
# for DURATION, the follower is killed KILL_AT into it and restarted a
# second later. Prints, per round: the data it held, the seconds from the
# restart until its admin endpoint answers with a leader, the scan's log
# line (runs, took), the line saying when it let the segments go to vacuum
# again, and the bench's summary.
#
#   scripts/perf/restart-scan.sh [OUT]   (default /tmp/b3-perf/restart-<time>)
#
# Environment: B3_BIN [built from this checkout], WORK [/tmp/b3-perf],
# ROUNDS [1], SIZE [1MiB], CONCURRENCY [16], DURATION [40s], KILL_AT [30].
set -uo pipefail
source "$(dirname "$0")/lib.sh"

work=${WORK:-/tmp/b3-perf}
out=${1:-$work/restart-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" "$work" || die "cannot create $out"
build_b3 "$work"
trap 'stop_cluster; rm -rf "$work/data-restart"' EXIT
trap 'log interrupted; exit 130' INT TERM
export NODE_LOG_LEVEL=info

for round in $(seq "${ROUNDS:-1}"); do
	start_cluster "$work/data-restart"
	f=$(( ${leader#n} % 3 + 1 )) # a follower
	bench 300 peak --endpoint "$endpoint" --access-key "$access_key" --secret-key "$secret_key" \
		--bucket b3-restart --ops upload --sizes "${SIZE:-1MiB}" --concurrency "${CONCURRENCY:-16}" \
		--duration "${DURATION:-40s}" --charts=false --out "$out/bench-$round" >"$out/bench-$round.txt" 2>&1 &
	load=$!
	sleep "${KILL_AT:-30}"
	kill -KILL "${node_pids[$((f - 1))]}"
	wait "${node_pids[$((f - 1))]}" 2>/dev/null
	held=$(du -sh "$work/data-restart/n$f/segments" | cut -f1)
	sleep 1
	: >"$out/node-n$f.log"
	started=$(date +%s.%N)
	start_node "$f"
	until "$B3_BIN" admin --endpoint "http://${adm[$((f - 1))]}" --token bench-admin-token-000 cluster status --json 2>/dev/null |
		python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin).get("leader") else 1)' 2>/dev/null; do
		sleep 0.1
	done
	serving=$(python3 -c "import time; print('%.1f' % (time.time() - $started))")
	wait "$load"
	sleep 2
	echo "round $round: n$f killed holding $held of segments; admin answers with a leader ${serving}s after the restart"
	grep -h "runs of records\|caught up after the unclean end" "$out/node-n$f.log" | sed 's/^/  /'
	grep -hE "^ +upload +[0-9]" "$out/bench-$round.txt" | sed 's/^/  /'
	stop_cluster
done
