#!/usr/bin/env bash
# What a vacuum pass costs clients. For each b3 server binary (alternated,
# ROUNDS times) and each object size, on a fresh server
# (--segment-size 64MiB --vacuum-interval 0) holding FILL x 1 MiB objects
# of which 80% were deleted:
#
#   peak:  b3 bench peak --ops upload --concurrency 8 --duration 8s, once
#          without vacuum, then again right after `b3 admin vacuum start 0.3`
#          (the pass runs during the second cell);
#   mixed: b3 bench mixed --preset baseline --multipliers 1,2, once plain and
#          once with --at-hold '2=b3 admin vacuum start 0.3' (a pass starts as
#          the 2x hold does).
#
# The load generator and admin client are always this checkout's b3, so
# binaries without `bench mixed --at-hold` can still be measured as servers.
#
#   scripts/perf/vacuum-pacing.sh [--smoke] [OUT]   (default /tmp/b3-perf/vacuum-<time>)
#
# Environment: SERVERS ["current=<this checkout's b3>"]: space-separated
# label=binary pairs, e.g. "before=/tmp/b3-before after=/tmp/b3-after";
# ROUNDS [2]; FILL [3000]; SIZES ["4KiB 1MiB"]; DURATION [8s];
# MIXED_DURATION [20s]; MIXED [1]: 0 skips the mixed test; B3_BIN.
# --smoke: 200 objects, 2 s cells, one round, 4 s mixed holds.
#
# Output: OUT/<round>-<label>-*.json (the bench reports), OUT/results.tsv
# (one line per cell: round, server, test, size or multiple, vacuum,
# ops/s, MB/s, p50, p99 in ms) and OUT/summary.txt (medians and ratios).
set -uo pipefail
source "$(dirname "$0")/lib.sh"

smoke=false
if [ "${1:-}" = --smoke ]; then smoke=true; shift; fi
work=${WORK:-/tmp/b3-perf}
out=${1:-$work/vacuum-$(date +%Y%m%d-%H%M%S)}
rounds=${ROUNDS:-2}
fill=${FILL:-3000}
sizes=${SIZES:-4KiB 1MiB}
duration=${DURATION:-8s}
mixed_duration=${MIXED_DURATION:-20s}
run_mixed=${MIXED:-1}
if $smoke; then
	rounds=1 fill=200 duration=2s mixed_duration=4s
fi
mkdir -p "$out" "$work" || die "cannot create $out"
trap stop_server EXIT # a failed step must not leave a server running
build_b3 "$work"
servers=${SERVERS:-current=$B3_BIN}
SERVER_ARGS=(--segment-size 64MiB --vacuum-interval 0)
export AWS_ACCESS_KEY_ID=$access_key AWS_SECRET_ACCESS_KEY=$secret_key AWS_REGION=us-east-1
results=$out/results.tsv
printf 'round\tserver\ttest\tcell\tvacuum\tops_s\tmb_s\tp50_ms\tp99_ms\n' >"$results"
{
	echo "started: $(date -Is)"
	echo "servers: $servers"
	echo "rounds=$rounds fill=$fill sizes=$sizes duration=$duration mixed=$run_mixed/$mixed_duration"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/run.txt"

admin() { "$B3_BIN" admin --endpoint "http://$admin_address" --data "$data" "$@"; }

# prepare: a fresh server with FILL x 1 MiB objects, 80% of them deleted.
prepare() {
	local label=$1
	data=$work/vacuum-data
	start_server b3 "$data" "$out/server-$label.log"
	log "$label: filling $fill x 1 MiB"
	bench 900 peak --endpoint "$endpoint" --access-key "$access_key" --secret-key "$secret_key" \
		--ops upload --sizes 1MiB --concurrency 8 --count "$fill" --duration 0 --cleanup=false \
		--prefix fill --charts=false --out "$out/fill" >/dev/null
	log "$label: deleting 80%"
	local keys=$out/delete-keys
	seq 0 $((fill - 1)) | awk '$1 % 5 != 0 {print "fill/up/1048576/c8/" $1}' >"$keys"
	split -l 1000 "$keys" "$keys."
	for part in "$keys".*; do
		jq -R '{Key: .}' "$part" | jq -s '{Objects: ., Quiet: true}' >"$part.json"
		timeout 300 aws --endpoint-url "$endpoint" s3api delete-objects --bucket b3-bench \
			--delete "file://$part.json" >/dev/null || die "delete-objects failed"
	done
	rm -f "$keys" "$keys".*
	admin stats | grep '^segments:' >&2
}

# record ROUND LABEL TEST CELL VACUUM REPORT: appends the report's cells.
record() {
	local report=$6
	[ -n "$report" ] || { log "warning: no report for $2 $3 $4 $5"; return; }
	jq -r --arg r "$1" --arg s "$2" --arg t "$3" --arg c "$4" --arg v "$5" '
		.cells[] | select(.op == "upload")
		| [$r, $s, $t, (if $t == "mixed" then .mode + "-" + $c else $c end), $v,
		   (.ops_per_sec | . * 10 | round / 10), (.mb_per_sec | . * 10 | round / 10),
		   (.latency_ms.p50 | . * 100 | round / 100), (.latency_ms.p99 | . * 100 | round / 100)]
		| @tsv' "$report" >>"$results"
}

peak_cell() { # ROUND LABEL SIZE VACUUM
	local dir=$out/$1-$2-peak-$3-$4
	mkdir -p "$dir"
	bench 120 peak --endpoint "$endpoint" --access-key "$access_key" --secret-key "$secret_key" \
		--ops upload --sizes "$3" --concurrency 8 --duration "$duration" --cleanup=false \
		--charts=false --out "$dir" >/dev/null
	record "$1" "$2" peak "$3" "$4" "$(latest "$dir" peak)"
}

mixed_run() { # ROUND LABEL VACUUM
	local dir=$out/$1-$2-mixed-$3 hook=()
	mkdir -p "$dir"
	if [ "$3" = vacuum ]; then
		hook=(--at-hold "2=$B3_BIN admin --endpoint http://$admin_address --data $data vacuum start 0.3")
	fi
	bench 300 mixed --endpoint "$endpoint" --access-key "$access_key" --secret-key "$secret_key" \
		--preset baseline --multipliers 1,2 --duration "$mixed_duration" --drain 10s \
		--charts=false --out "$dir" "${hook[@]}" >/dev/null
	record "$1" "$2" mixed "$3" "$3" "$(latest "$dir" mixed)"
}

for round in $(seq 1 "$rounds"); do
	for pair in $servers; do
		label=${pair%%=*}
		SERVER_BIN=${pair#*=}
		[ -x "$SERVER_BIN" ] || die "$SERVER_BIN is not executable"
		for size in $sizes; do
			prepare "$label"
			log "round $round, $label, $size: without vacuum"
			peak_cell "$round" "$label" "$size" none
			admin vacuum start 0.3 >/dev/null || die "vacuum start failed"
			log "round $round, $label, $size: vacuum running"
			peak_cell "$round" "$label" "$size" vacuum
			admin vacuum status --json | jq -c '{running, bytes_copied, segments_removed, pace}' >&2
			stop_server
		done
		if [ "$run_mixed" = 1 ]; then
			for vac in none vacuum; do
				prepare "$label"
				log "round $round, $label: mixed, ${vac} at the 2x hold"
				mixed_run "$round" "$label" "$vac"
				admin vacuum status --json | jq -c '{running, bytes_copied, segments_removed, pace}' >&2
				stop_server
			done
		fi
	done
done
rm -rf "$work/vacuum-data"

# Medians per server, test and cell; then the cost of vacuum as ratios.
python3 - "$results" >"$out/summary.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cells = {}
for r in rows:
    cells.setdefault((r["server"], r["test"], r["cell"], r["vacuum"]), []).append(r)
print("server\ttest\tcell\tvacuum\truns\tops/s (median)\tMB/s\tp99 ms\tops/s runs")
med = {}
for key in sorted(cells):
    rs = cells[key]
    m = {f: statistics.median(float(r[f]) for r in rs) for f in ("ops_s", "mb_s", "p99_ms")}
    med[key] = m
    print("\t".join(key) + f"\t{len(rs)}\t{m['ops_s']:.1f}\t{m['mb_s']:.1f}\t{m['p99_ms']:.2f}\t" + ", ".join(r["ops_s"] for r in rs))
print()
print("server\ttest\tcell\tthroughput with/without vacuum\tp99 with/without")
for (s, t, c, v), m in sorted(med.items()):
    if v != "vacuum":
        continue
    base_cell = c.replace("vacuum", "none") if t == "mixed" else c
    base = med.get((s, t, base_cell, "none"))
    if base and base["ops_s"] > 0 and base["p99_ms"] > 0:
        print(f"{s}\t{t}\t{c}\t{m['ops_s'] / base['ops_s']:.2f}\t{m['p99_ms'] / base['p99_ms']:.2f}")
PY
echo "finished: $(date -Is)" >>"$out/run.txt"
cat "$out/summary.txt"
log "results in $out"
