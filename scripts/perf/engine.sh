#!/usr/bin/env bash
# What the disk under b3 can do, with no server in the way: fio through the
# shared reference script (../shared/tools/disk-reference.sh, relative to
# the repository), then `b3 bench disk` (write() latency and MB/s by buffer
# size, buffered and O_DIRECT, with and without fdatasync) on the same
# directory. Run it in the same session as compare-minio.sh and quote the
# servers' throughput as ratios of these numbers.
#
#   scripts/perf/engine.sh [--smoke] [DIR [OUT]]   (defaults: /tmp/b3-perf/disk, /tmp/b3-perf/engine-<time>)
#
# Environment: B3_BIN [built from this checkout], FIO_SIZE [2G],
# DISK_ARGS [the default sweep, 256 MiB or 5 s per cell], DISK_LIMIT [600],
# REF_LIMIT [600] (seconds). --smoke: 64M fio files and two tiny disk cells
# (the fio script's two 10 s O_SYNC runs still take 20 s).
set -uo pipefail
source "$(dirname "$0")/lib.sh"

smoke=false
if [ "${1:-}" = --smoke ]; then smoke=true; shift; fi
work=${WORK:-/tmp/b3-perf}
dir=${1:-$work/disk}
out=${2:-$work/engine-$(date +%Y%m%d-%H%M%S)}
reference=$repo/../shared/tools/disk-reference.sh
if $smoke; then
	fio_size=${FIO_SIZE:-64M}
	disk_args=${DISK_ARGS:---sizes 4KiB,1MiB --modes buffered,direct+sync --bytes 16MiB --duration 1s}
else
	fio_size=${FIO_SIZE:-2G}
	disk_args=${DISK_ARGS:-}
fi

mkdir -p "$dir" "$out" "$work" || die "cannot create $dir or $out"
build_b3 "$work"
{
	echo "started: $(date -Is)"
	echo "dir: $dir ($(df -hT "$dir" | awk 'NR==2 {print $1, $2, $3 " total"}'))"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/run.txt"

if [ -x "$reference" ] || [ -f "$reference" ]; then
	log "fio reference on $dir ($fio_size)"
	timeout --kill-after=30 "${REF_LIMIT:-600}" bash "$reference" "$dir" "$fio_size" | tee "$out/disk-reference.txt"
	tail -1 "$out/disk-reference.txt" >"$out/disk-reference.json"
else
	log "warning: $reference not found; fio reference skipped"
fi

drop_caches
log "b3 bench disk on $dir"
# shellcheck disable=SC2086 # the argument list is meant to split
bench "${DISK_LIMIT:-600}" disk --dir "$dir" --local --out "$out" $disk_args | tee "$out/disk.txt"
echo "finished: $(date -Is)" >>"$out/run.txt"
log "results in $out"
