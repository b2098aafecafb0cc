#!/usr/bin/env bash
# A 3-node b3 cluster (sync replication, all nodes on this machine) against
# one b3 server, the same `b3 bench peak` upload cells against each, one
# target at a time on fresh data directories:
#   4 KiB x c16, c64;  1 MiB x c16;  64 MiB x c4;  10 s per cell.
# The cluster is benchmarked through its leader's endpoint (FORWARD=1: a
# follower's, adding the forwarding hop). Summaries go to OUT/*.txt, and
# per cell the CPU seconds (user + system, /proc/PID/stat) of the server
# or of each node and the load average to OUT/*-cpu.txt.
#
#   scripts/perf/cluster.sh [OUT]      (default /tmp/b3-perf/cluster-<time>)
#
# Environment: B3_BIN [built from this checkout], WORK [/tmp/b3-perf],
# DURATION [10s], ROUNDS [1] (alternate the targets ROUNDS times),
# TARGETS ["single cluster"], CELLS [the cells above, ";"-separated, e.g.
# "--sizes 4KiB --concurrency 64;--sizes 64MiB --concurrency 4"],
# TLS [0] (1: the nodes talk mutual TLS, --cluster-tls-*, with
# certificates from `b3 node certs`; target "cluster-tls" does it in the
# same run, so TARGETS="cluster cluster-tls" alternates without and with),
# DISK [1] (0: skip the disk reference).
#
# The disk reference, before the first round and after the last: fio's
# direct 1 MiB sequential write of 1 GiB with one writer, then with three
# at once (the three nodes share this disk). The group writes every byte
# three times, so a third of the three writers' rate is the most payload
# it can store; OUT/summary.txt sets that ceiling beside the ratios.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

work=${WORK:-/tmp/b3-perf}
out=${1:-$work/cluster-$(date +%Y%m%d-%H%M%S)}
duration=${DURATION:-10s}
rounds=${ROUNDS:-1}
mkdir -p "$out" "$work" || die "cannot create $out"
build_b3 "$work"

trap 'stop_server; stop_cluster' EXIT
trap 'log interrupted; exit 130' INT TERM


cells=("--sizes 4KiB --concurrency 16,64" "--sizes 1MiB --concurrency 16" "--sizes 64MiB --concurrency 4")
if [ -n "${CELLS:-}" ]; then IFS=';' read -r -a cells <<<"$CELLS"; fi
targets=${TARGETS:-single cluster}
if [ "${TLS:-0}" = 1 ]; then targets=${targets//cluster/cluster-tls}; fi
hz=$(getconf CLK_TCK)

# disk_reference LABEL: fio with one, then three direct writers, appended
# to OUT/disk.txt as "LABEL JOBS MB/s".
disk_reference() {
	[ "${DISK:-1}" = 1 ] || return 0
	command -v fio >/dev/null || die "fio is missing (apt-get install -y fio), or DISK=0"
	local jobs dir=$work/disk-reference
	for jobs in 1 3; do
		rm -rf "$dir" && mkdir -p "$dir"
		fio --name=ref --directory="$dir" --rw=write --bs=1M --size=1G --numjobs=$jobs --direct=1 \
			--end_fsync=1 --group_reporting --output-format=json 2>/dev/null |
			python3 -c 'import json,sys; d=json.load(sys.stdin)["jobs"][0]; print(sys.argv[1], sys.argv[2], round(d["write"]["bw_bytes"]/1e6))' "$1" "$jobs" >>"$out/disk.txt" ||
			log "warning: fio failed"
	done
	rm -rf "$dir"
	log "disk ($1): $(grep "^$1 " "$out/disk.txt" | awk '{printf "%s writer(s) %s MB/s; ", $2, $3}')"
}
{
	echo "started: $(date -Is)"
	echo "host: $(uname -srm), $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "b3: $B3_BIN ($(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown))"
} >"$out/run.txt"
disk_reference before
for round in $(seq "$rounds"); do
	for target in $targets; do
		drop_caches
		case $target in
		single)
			start_server b3 "$work/data-single" "$out/single-server.log"
			pids=("$server_pid")
			;;
		cluster) start_cluster "$work/data-cluster" 0 ;;
		cluster-tls) start_cluster "$work/data-cluster" 1 ;;
		*) die "unknown target $target" ;;
		esac
		[ "$target" = single ] || pids=("${node_pids[@]}")
		for cell in "${cells[@]}"; do
			log "$target round $round: $cell"
			read -r -a before <<<"$(cpu_ticks "${pids[@]}")"
			load=$(cut -d' ' -f1 /proc/loadavg)
			# shellcheck disable=SC2086 # the cell's arguments are meant to split
			bench 300 peak --endpoint "$endpoint" --access-key "$access_key" --secret-key "$secret_key" \
				--bucket b3-perf --ops upload --duration "$duration" --charts=false $cell \
				--out "$out/$target-$round" >>"$out/$target-$round.txt"
			read -r -a after <<<"$(cpu_ticks "${pids[@]}")"
			cpu=""
			for i in "${!pids[@]}"; do
				cpu+=" $(awk -v a="${after[$i]}" -v b="${before[$i]}" -v hz="$hz" 'BEGIN{printf "%.2f", (a - b) / hz}')"
			done
			printf '%s\tload %s (start) %s (end)\tcpu s per process:%s\n' "$cell" "$load" "$(cut -d' ' -f1 /proc/loadavg)" "$cpu" >>"$out/$target-$round-cpu.txt"
		done
		if [ "$target" = single ]; then stop_server; else stop_cluster; fi
	done
done
# The data directories hold every byte the cells wrote (tens of GB).
rm -rf "$work/data-single" "$work/data-cluster"
disk_reference after
python3 - "$out" "$rounds" "$targets" <<'PY' | tee "$out/summary.txt"
import os, statistics, sys
out, rounds, targets = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
rate = {}  # (target, round, cell) -> (ops/s, MB/s)
for t in targets:
    for r in range(1, rounds + 1):
        try:
            lines = open(os.path.join(out, "%s-%d.txt" % (t, r))).read().splitlines()
        except OSError:
            continue
        for l in lines:
            f = l.split()
            if len(f) > 6 and f[0] == "upload":
                rate[(t, r, f[1] + " c" + f[2])] = (float(f[5]), float(f[6]))
cells = list(dict.fromkeys(k[2] for k in rate))
ref = {}
try:
    for l in open(os.path.join(out, "disk.txt")):
        when, jobs, mbs = l.split()
        ref.setdefault(jobs, []).append(float(mbs))
except OSError:
    pass
if ref:
    print("disk, direct 1 MiB writes (fio, before / after): " + "; ".join(
        "%s writer(s) %s MB/s" % (j, " / ".join("%.0f" % v for v in ref[j])) for j in sorted(ref)))
for t in targets:
    if t == "single":
        continue
    print("%s against one server, per round, then the median:" % t)
    for c in cells:
        ratios = [rate[(t, r, c)][0] / rate[("single", r, c)][0]
                  for r in range(1, rounds + 1) if (t, r, c) in rate and ("single", r, c) in rate and rate[("single", r, c)][0]]
        if not ratios:
            continue
        line = "  %-10s %s  median %.2f" % (c, " ".join("%.2f" % x for x in ratios), statistics.median(ratios))
        if "3" in ref:
            single = statistics.median(rate[("single", r, c)][1] for r in range(1, rounds + 1) if ("single", r, c) in rate)
            # Three copies of every byte: a third of three writers' rate.
            ceiling = max(ref["3"]) / 3
            if c.split()[0] not in ("1KiB", "4KiB") and single:
                line += "  (three copies cap it at %.0f MB/s: %.2f of one server's %.0f)" % (ceiling, ceiling / single, single)
        print(line)
PY
log "done: $out"
