#!/usr/bin/env bash
# `b3 bench hls` against one server on this machine: live cameras (4 Mbit/s,
# 2 s segments, playlists rewritten after each segment, retention deletes)
# with 1 viewer per 10 cameras, at each camera count in CAMERAS. Every camera
# count runs on a freshly started server with an empty data directory (no
# count measures what an earlier one left), the page cache dropped first.
# A count is HELD when no segment missed its deadline (stored before the
# next one was due), nothing failed, and the P99 segment upload is <= 1 s.
#
#   scripts/perf/hls.sh [--smoke] [OUT]       (default OUT: /tmp/b3-perf-hls/hls-<time>)
#
# Environment (defaults in brackets):
#   SERVERS   [b3]         b3 and/or minio (MinIO refuses chunked PUTs; the
#                          bench sends PUTs with a Content-Length, so both get the same requests)
#   CAMERAS   [200 400 600 800 1000]
#   HOLD      [30s]        hold per camera count; DRAIN [10s]
#   HLS_ARGS  []           further `b3 bench hls` flags
#   MINIO_BIN [/tmp/minio-bin/minio]  cd /tmp && GOBIN=/tmp/minio-bin go install github.com/minio/minio@latest
#   B3_BIN    [built from this checkout]   WORK [/tmp/b3-perf-hls]
#
# run.txt records the load average around each count and the CPU time the
# server and the load generator used during it (user + system): CPU per
# stored MB does not depend on how busy the machine is, latency does.
#
# Disk: a count writes cameras x HOLD/2 MB (1000 cameras, 30 s: 15 GB) and
# is deleted with its server's data directory before the next.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

smoke=false
if [ "${1:-}" = --smoke ]; then smoke=true; shift; fi
work=${WORK:-/tmp/b3-perf-hls}
out=${1:-$work/hls-$(date +%Y%m%d-%H%M%S)}
MINIO_BIN=${MINIO_BIN:-/tmp/minio-bin/minio}
servers=${SERVERS:-b3}
cameras=${CAMERAS:-200 400 600 800 1000}
hold=${HOLD:-30s} drain=${DRAIN:-10s}
if $smoke; then cameras=${CAMERAS:-10 20} hold=${HOLD:-4s}; fi

# children_cpu: sets children to the user + system CPU time of the
# children waited for so far (the generator, once it has exited; a running
# server is not counted). Called, not substituted: `times` must run in
# this shell, a subshell has its own children.
children_cpu() {
	times >"$out/.times"
	children=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.2f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$out/.times")
}

mkdir -p "$out" "$work" || die "cannot create $out"
begin_run "$work" >"$out/run.txt"
{
	echo "servers: $servers; cameras: $cameras; hold $hold, drain $drain; extra: ${HLS_ARGS:-}"
} >>"$out/run.txt"

for server in $servers; do
	for n in $cameras; do
		drop_caches
		start_server "$server" "$work/data-$server" "$out/$server-$n-server.log"
		echo "$server $n cameras: load before $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/run.txt"
		cpu_before=$(cpu_seconds "$server_pid")
		children_cpu
		gen_before=$children
		log "$server: $n cameras for $hold"
		# shellcheck disable=SC2086 # HLS_ARGS is meant to split
		bench 600 hls --endpoint "$endpoint" --access-key "$access_key" --secret-key "$secret_key" \
			--bucket b3-perf --local --pid "$server_pid" --out "$out/$server" \
			--cameras "$n" --segment 2s --bitrate 4Mbit --viewers 10% --retention 12s --list-size 6 \
			--duration "$hold" --drain "$drain" --cleanup=false ${HLS_ARGS:-} >"$out/$server-$n.txt" 2>"$out/$server-$n.log"
		grep -E "cameras, .* viewers:|worst cameras" "$out/$server-$n.txt" | sed "s/^/$server: /" | tee -a "$out/summary.txt"
		children_cpu
		echo "$server $n cameras: load after $(cut -d' ' -f1-3 /proc/loadavg);" \
			"server CPU $(echo "$(cpu_seconds "$server_pid") - $cpu_before" | bc) s," \
			"generator CPU $(echo "$children - $gen_before" | bc) s" >>"$out/run.txt"
		stop_server
		rm -rf "$work/data-$server"
	done
done
rm -f "$out/.times"
echo "finished: $(date -Is)" >>"$out/run.txt"
log "results in $out"
