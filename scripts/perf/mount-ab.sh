#!/bin/bash
# A/B of two b3 binaries as `b3 mount`, alternated back to back against one
# b3 server (run by the first binary), measuring what the mount itself costs
# as well as the rates:
#   - 2,000 files of 128 KiB written by 16 fio jobs (the small-file job of
#     scripts/perf/mount.sh), then read after the kernel's dentry and inode
#     caches were dropped (echo 2 > drop_caches: the server's data stays in
#     the page cache, so the read is "warm" as small-read-warm is);
#   - one 2 GiB object (uploaded once) read by one fio job, 1 MiB blocks,
#     warm.
# For each phase: files/s or MiB/s from fio, and the CPU seconds (utime +
# stime from /proc/PID/stat) of the mount and of the server, per 1,000
# files or per GiB. The 1-minute load average is recorded beside each run.
#
# usage: scripts/perf/mount-ab.sh OLD_B3 NEW_B3 [rounds]   (root; fio, fuse3, aws CLI)
# Wrap it in the shared lock on a shared machine (-o: the server and mounts
# it starts must not inherit the lock):
#   flock -o /tmp/b3-measure.lock scripts/perf/mount-ab.sh /tmp/b3-old /tmp/b3-new 3
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
old=$1 new=$2 rounds=${3:-3}
work=${WORK:-/tmp/b3-perf-mount-ab}
port=${PORT:-19480}
ak=PERFACCESSKEY0000000 sk=perf/secret/key/00000000000000000000000
endpoint=http://127.0.0.1:$port
bucket=perf
export AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk AWS_REGION=us-east-1
for t in fio fusermount3 aws; do command -v $t >/dev/null || { echo "missing $t" >&2; exit 1; }; done
rm -rf "$work" && mkdir -p "$work/data" "$work/mnt"
B3_CONSOLE_ADDRESS="" B3_ACCESS_KEY=$ak B3_SECRET_KEY=$sk "$old" server --data "$work/data" --address 127.0.0.1:$port \
	--admin-address 127.0.0.1:$((port + 1)) >"$work/server.log" 2>&1 &
server=$!
cleanup() {
	stop_mount "$work/mnt"
	kill "$server" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work/data"
}
trap cleanup EXIT
for _ in $(seq 600); do
	curl -s -o /dev/null "$endpoint" && break
	sleep 0.1
done
aws --endpoint-url "$endpoint" s3 mb "s3://$bucket" >/dev/null

hz=$(getconf CLK_TCK)

mount_bin() { mount_b3 "$1" "$endpoint" "$bucket" "$work/mnt" "$work/mount.log"; }

# fio_json JOB-ARGS... runs fio and prints "files/s MiB/s" of its one phase.
fio_json() {
	fio --output-format=json "$@" 2>>"$work/fio.err" | python3 -c '
import json,sys
j=json.load(sys.stdin)["jobs"][0]
rw="write" if j["write"]["io_bytes"] else "read"
if j["error"]: print("fail fail"); sys.exit()
print("%.0f %.0f" % (2000/(j[rw]["runtime"]/1000), j[rw]["bw_bytes"]/2**20))'
}

small_job() { # rw dir
	echo --name=small --directory="$2" --rw="$1" --bs=128k --filesize=128k --nrfiles=125 \
		--numjobs=16 --openfiles=1 --file_service_type=sequential --create_on_open=1 --fallocate=none \
		--fsync_on_close=1 --group_reporting
}

# measure NAME UNIT PER ARGS...: runs fio with ARGS, records the rate and
# the CPU of the mount and the server per PER units of work.
results="$work/results.tsv"
: >"$results"
measure() {
	local name=$1 field=$2 per=$3
	shift 3
	local m0 s0 m1 s1 out rate
	m0=$(cpu_ticks "$mount_pid") s0=$(cpu_ticks "$server")
	out=$(fio_json "$@")
	m1=$(cpu_ticks "$mount_pid") s1=$(cpu_ticks "$server")
	rate=$(echo "$out" | cut -d' ' -f"$field")
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$bin" "$name" "$rate" \
		"$(echo "$m0 $m1 $hz $per" | awk '{printf "%.3f", ($2-$1)/$3/$4}')" \
		"$(echo "$s0 $s1 $hz $per" | awk '{printf "%.3f", ($2-$1)/$3/$4}')" | tee -a "$results"
}

# The 2 GiB object, written once through the new mount (not measured).
mount_bin "$new"
mkdir -p "$work/mnt/seq"
fio --name=seq --directory="$work/mnt/seq" --rw=write --bs=1M --size=2g --fallocate=none --end_fsync=1 \
	--filename=big >/dev/null
unmount_b3 "$work/mnt"

echo "# $(date -u +%FT%TZ) $(nproc) cores; old=$old new=$new"
printf 'round\tbinary\tmeasure\trate\tmount CPU s\tserver CPU s\n'
echo "# rates: files/s (small), MiB/s (seq); CPU per 1,000 files (small) or per GiB (seq)"
for round in $(seq "$rounds"); do
	order="old new"
	[ $((round % 2)) = 0 ] && order="new old"
	for bin in $order; do
		b=$old
		[ "$bin" = new ] && b=$new
		printf '%s\t%s\tload\t%s\n' "$round" "$bin" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$results"
		mount_bin "$b"
		dir="$work/mnt/small-$round-$bin"
		mkdir "$dir"
		# shellcheck disable=SC2046
		measure small-write 1 2 $(small_job write "$dir")
		sync
		echo 2 >/proc/sys/vm/drop_caches
		# shellcheck disable=SC2046
		measure small-read 1 2 $(small_job read "$dir")
		measure seq-read-1job 2 2 --name=seq --filename="$work/mnt/seq/big" --rw=read --bs=1M --size=2g
		unmount_b3 "$work/mnt"
	done
done
echo "# medians (rate, mount CPU, server CPU)"
print_medians "$results"
