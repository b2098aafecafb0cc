#!/usr/bin/env bash
# `b3 bench hls --part` against one server on this machine: Low-Latency HLS
# streams (4 Mbit/s, a part every PART, 1 s segments, the playlist rewritten
# after every part with a preload hint of the next), each with PLAYERS
# players that ask for every part before it exists and block on playlist
# reloads. Every run is on a freshly started server with an empty data
# directory and a bucket with LL-HLS on. A run is HELD when no part missed
# its deadline, nothing failed, and the p99 part latency (the part's PUT
# beginning to a player having it whole) is <= 100 ms.
#
#   scripts/perf/llhls.sh [OUT]              (default OUT: /tmp/b3-perf-llhls/llhls-<time>)
#
# Environment (defaults in brackets): RUNS, one "streams:part:players" per
# run [50:200ms:1 100:200ms:1 200:200ms:1], HOLD [20s], B3_BIN, WORK
# [/tmp/b3-perf-llhls], LLHLS_ARGS (further `b3 bench hls` flags).
set -uo pipefail
source "$(dirname "$0")/lib.sh"

work=${WORK:-/tmp/b3-perf-llhls}
out=${1:-$work/llhls-$(date +%Y%m%d-%H%M%S)}
runs=${RUNS:-50:200ms:1 100:200ms:1 200:200ms:1}
hold=${HOLD:-20s}
mkdir -p "$out" "$work" || die "cannot create $out"
begin_run "$work" >"$out/run.txt"
echo "runs: $runs; hold $hold; extra: ${LLHLS_ARGS:-}" >>"$out/run.txt"
for r in $runs; do
	IFS=: read -r streams part players <<<"$r"
	drop_caches
	start_server b3 "$work/data" "$out/$streams-$part-$players-server.log"
	AWS_ACCESS_KEY_ID=$access_key AWS_SECRET_ACCESS_KEY=$secret_key AWS_REGION=us-east-1 \
		aws --endpoint-url "$endpoint" s3api create-bucket --bucket b3-perf >/dev/null || die "create bucket"
	"$B3_BIN" admin buckets hls b3-perf on --url "http://$admin_address" --data "$work/data" >/dev/null || die "LL-HLS on"
	echo "$streams streams, $part parts, $players players: load before $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/run.txt"
	cpu_before=$(cpu_seconds "$server_pid")
	log "$streams streams of $part parts, $players players each, for $hold"
	# shellcheck disable=SC2086 # LLHLS_ARGS is meant to split
	bench 600 hls --endpoint "$endpoint" --access-key "$access_key" --secret-key "$secret_key" \
		--bucket b3-perf --create-bucket=false --local --pid "$server_pid" --out "$out/b3" \
		--cameras "$streams" --part "$part" --players "$players" --segment 1s --bitrate 4Mbit --list-size 6 \
		--duration "$hold" ${LLHLS_ARGS:-} >"$out/$streams-$part-$players.txt" 2>"$out/$streams-$part-$players.log"
	echo "load after $(cut -d' ' -f1-3 /proc/loadavg); server CPU $(echo "$(cpu_seconds "$server_pid") - $cpu_before" | bc) s" >>"$out/run.txt"
	grep -A1 "LL-HLS streams" "$out/$streams-$part-$players.txt" | tee -a "$out/summary.txt"
	stop_server
done
echo "finished: $(date -Is)" >>"$out/run.txt"
