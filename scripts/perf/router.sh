#!/usr/bin/env bash
# What `b3 router` adds to a request: one replica group of three nodes and
# one router on this machine, the same `b3 bench peak` cells against the
# group's leader directly and through the router, alternated ROUNDS
# times. Per cell: ops/s and latency p50/p99 of each target (OUT/*.txt),
# and the router's CPU seconds (user + system, /proc/PID/stat) per
# request it sent on (its b3_router_requests_total: every request of a
# run, the bench's set-up and clean-up included).
#
#   scripts/perf/router.sh [OUT]      (default /tmp/b3-perf/router-<time>)
#
# Environment: B3_BIN [built from this checkout], WORK [/tmp/b3-perf],
# DURATION [5s], ROUNDS [3], CELLS ["--sizes 4KiB --concurrency 1,16"].
set -uo pipefail
source "$(dirname "$0")/lib.sh"

work=${WORK:-/tmp/b3-perf}
out=${1:-$work/router-$(date +%Y%m%d-%H%M%S)}
duration=${DURATION:-5s}
rounds=${ROUNDS:-3}
cells=${CELLS:-"--sizes 4KiB --concurrency 1,16"}
mkdir -p "$out" "$work" || die "cannot create $out"
build_b3 "$work"
router_pid=""
trap 'stop_cluster; [ -n "$router_pid" ] && kill "$router_pid" 2>/dev/null' EXIT
trap 'log interrupted; exit 130' INT TERM
hz=$(getconf CLK_TCK)
# router_requests: how many requests the router has sent on.
router_requests() {
	curl -s -H "Authorization: Bearer bench-admin-token-000" "http://$router_admin/metrics" |
		awk '/^b3_router_requests_total/ {s += $2} END {printf "%d\n", s}'
}

{
	echo "started: $(date -Is)"
	echo "host: $(uname -srm), $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "b3: $B3_BIN ($(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown))"
} >"$out/run.txt"
start_cluster "$work/data-router" 0
direct=$endpoint
router_addr=127.0.0.1:$(free_port) router_admin=127.0.0.1:$(free_port)
B3_ADMIN_TOKEN=bench-admin-token-000 B3_CLUSTER_SECRET=bench-cluster-secret "$B3_BIN" router --address "$router_addr" \
	--admin-address "$router_admin" --cluster-seeds "${cl[0]}" --log-level warn >>"$out/router.log" 2>&1 &
router_pid=$!
server_pid=$router_pid
wait_http "http://$router_addr/" 30 || die "the router does not answer"
for round in $(seq "$rounds"); do
	for target in leader router; do
		ep=$direct
		[ "$target" = router ] && ep=http://$router_addr
		log "$target round $round: $cells"
		read -r -a before <<<"$(cpu_ticks "$router_pid")"
		reqs_before=$(router_requests)
		# shellcheck disable=SC2086 # the cell's arguments are meant to split
		bench 300 peak --endpoint "$ep" --access-key "$access_key" --secret-key "$secret_key" \
			--bucket b3-router --duration "$duration" --charts=false $cells \
			--out "$out/$target-$round" >>"$out/$target-$round.txt"
		read -r -a after <<<"$(cpu_ticks "$router_pid")"
		awk -v a="${after[0]}" -v b="${before[0]}" -v hz="$hz" -v n="$(($(router_requests) - reqs_before))" \
			'BEGIN{printf "router cpu s %.3f requests %d\n", (a - b) / hz, n}' >>"$out/$target-$round-cpu.txt"
	done
done
python3 - "$out" "$rounds" <<'PY' | tee "$out/summary.txt"
import glob, json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
cells = {}  # (op, size, conc) -> target -> list of (ops/s, p50 ms, p99 ms)
cpu, reqs = [], []
for t in ("leader", "router"):
    for r in range(1, rounds + 1):
        for path in glob.glob(os.path.join(out, "%s-%d" % (t, r), "*.json")):
            if path.endswith("-series.json"):
                continue
            d = json.load(open(path))
            for c in d.get("cells", []):
                key = (c["op"], c.get("size"), c["concurrency"])
                lat = c.get("latency_ms", {})
                cells.setdefault(key, {}).setdefault(t, []).append((c.get("ops_per_sec", 0), lat.get("p50", 0), lat.get("p99", 0)))
        if t == "router":
            try:
                f = open(os.path.join(out, "router-%d-cpu.txt" % r)).read().split()
                cpu.append(float(f[3]))
                reqs.append(int(f[5]))
            except (OSError, ValueError, IndexError):
                pass
for key in sorted(cells, key=str):
    row = cells[key]
    if "leader" not in row or "router" not in row:
        continue
    med = {t: [statistics.median(x[i] for x in row[t]) for i in range(3)] for t in row}
    print("%-8s %-6s c%-3s leader %8.0f ops/s p50 %6.2f ms p99 %6.2f ms | router %8.0f ops/s p50 %6.2f ms p99 %6.2f ms | ratio %.2f, p50 +%.2f ms" % (
        key[0], key[1], key[2], *med["leader"], *med["router"], med["router"][0] / med["leader"][0] if med["leader"][0] else 0, med["router"][1] - med["leader"][1]))
if cpu and sum(reqs):
    print("router CPU: %.1f us per request (median of rounds %s; %s s over %s requests)" % (
        statistics.median(1e6 * c / n for c, n in zip(cpu, reqs) if n), " ".join("%.0f" % (1e6 * c / n) for c, n in zip(cpu, reqs) if n),
        "+".join("%.2f" % c for c in cpu), "+".join(str(n) for n in reqs)))
PY
log "done: $out"
