#!/usr/bin/env bash
# The disk alone under the write pattern of `b3 bench hls` at 800 cameras,
# to tell a b3 stall from a disk or host one: fio appends 8 MiB O_DIRECT
# writes, one at a time, into new 1 GiB files (as b3's segment flusher
# does), fdatasync every 4 writes (group commits), capped at RATE, for
# RUNTIME; vmstat beside it records each second's CPU steal (st) and
# iowait (wa). Needs fio (apt-get install fio).
#
#   scripts/perf/hls-disk.sh [OUT]     (default OUT: /tmp/b3-perf-hls/disk-<time>)
#
# Environment: RATE [400m]  RUNTIME [90]  DIR [/tmp/b3-perf-hls/fio-data]
# It writes up to 24 GiB under DIR and deletes them at the end.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
out=${1:-/tmp/b3-perf-hls/disk-$(date +%Y%m%d-%H%M%S)}
rate=${RATE:-400m} runtime=${RUNTIME:-90} dir=${DIR:-/tmp/b3-perf-hls/fio-data}
command -v fio >/dev/null || die "fio is not installed (apt-get install fio)"
mkdir -p "$out" "$dir" || die "cannot create $out or $dir"
trap 'rm -rf "$dir"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >"$out/run.txt"
vmstat 1 $((runtime + 5)) >"$out/vmstat.txt" &
vm=$!
fio --name=hls --directory="$dir" --rw=write --bs=8M --direct=1 --ioengine=psync --filesize=1g --nrfiles=24 --size=24g \
	--file_service_type=sequential --rate="$rate" --time_based --runtime="$runtime" --fdatasync=4 \
	--write_bw_log="$out/fio" --log_avg_msec=1000 --output="$out/fio.txt" || log "warning: fio failed"
kill "$vm" 2>/dev/null
wait "$vm" 2>/dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/run.txt"
grep -E "WRITE:|^ +(clat|sync) \(" "$out/fio.txt" | tee -a "$out/run.txt"
log "results in $out (per-second bandwidth: fio_bw.1.log; steal and iowait: vmstat.txt, columns st and wa)"
