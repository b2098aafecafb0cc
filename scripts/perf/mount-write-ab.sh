#!/bin/bash
# A/B of two b3 binaries on the one-job sequential write, each binary as
# both the server and the mount, alternated back to back (the order flips
# every round). Per binary and round, on a fresh server:
#   - `b3 bench peak --sizes 2GiB --concurrency 1 --ops upload --count 2`:
#     the S3 API's own upload rate (the transfer manager: 16 MiB parts, 4
#     in flight);
#   - `fio --rw=write --bs=1M --numjobs=1 --size=2g --end_fsync=1` through
#     `b3 mount` (default flags);
#   - with SMALL=1, 2,000 files of 128 KiB written by 16 fio jobs through
#     the mount (the small-file job of scripts/perf/mount.sh).
# For each: the rate, and the CPU seconds (utime+stime from /proc/PID/stat)
# of the server, the mount and the client (fio's or b3 bench's, from
# /usr/bin/time) per GiB (per 1,000 files for small files). The 1-minute
# load average is recorded beside each run.
#
# usage: scripts/perf/mount-write-ab.sh OLD_B3 NEW_B3 [rounds]   (root; fio, fuse3)
# Wrap it in the shared lock on a shared machine (-o: the servers and mounts
# it starts must not inherit the lock):
#   flock -o /tmp/b3-measure.lock scripts/perf/mount-write-ab.sh /tmp/b3-old /tmp/b3-new 3
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
old=$1 new=$2 rounds=${3:-3}
work=${WORK:-/tmp/b3-perf-mount-write}
access_key=PERFACCESSKEY0000000 secret_key=perf/secret/key/00000000000000000000000
bucket=perf
export AWS_ACCESS_KEY_ID=$access_key AWS_SECRET_ACCESS_KEY=$secret_key AWS_REGION=us-east-1
for t in fio fusermount3 /usr/bin/time; do command -v $t >/dev/null || { echo "missing $t" >&2; exit 1; }; done
rm -rf "$work" && mkdir -p "$work/mnt"

cleanup() {
	stop_mount "$work/mnt"
	stop_server
	rm -rf "$work/data"
}
trap cleanup EXIT

hz=$(getconf CLK_TCK)
per() { echo "$1 $2 $hz $3" | awk '{printf "%.3f", ($2-$1)/$3/$4}'; } # ticks0 ticks1 units

mount_bin() { mount_b3 "$1" "$endpoint" "$bucket" "$work/mnt" "$work/mount.log"; }

results="$work/results.tsv"
: >"$results"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$bin" "$@" | tee -a "$results"; }

# api B3: b3 bench uploads of 2 GiB objects, one at a time; MiB/s and the
# CPU per GiB of the server and of b3 bench.
api() {
	local s0 s1 out
	s0=$(cpu_ticks "$server_pid")
	out=$(/usr/bin/time -f "TIME %U %S" "$1" bench peak --endpoint "$endpoint" --bucket "$bucket" --charts=false \
		--out "$work/bench" --duration 0 --count 2 --sizes 2GiB --concurrency 1 --ops upload 2>&1)
	s1=$(cpu_ticks "$server_pid")
	row api-2GiB-upload \
		"$(echo "$out" | awk '$1=="upload" {v = $7} END {printf "%d", v*1e6/2^20}')" \
		"$(per "$s0" "$s1" 4)" "-" \
		"$(echo "$out" | awk '$1=="TIME" {printf "%.3f", ($2+$3)/4}')"
}

# fio_run KIND ARGS...: runs fio; prints "rate cpu": MiB/s (KIND gib: 2 GiB
# written) or files/s (KIND files: 2,000 files), and fio's own CPU seconds
# per GiB or per 1,000 files (both: per half of the run).
fio_run() {
	local kind=$1
	shift
	{ fio --output-format=json "$@" 2>>"$work/fio.err" || true; } | python3 -c '
import json,sys
try:
    j=json.load(sys.stdin)["jobs"][0]
    w=j["write"]
    if j["error"]: raise Exception
    secs=w["runtime"]/1000
    rate=2000/secs if sys.argv[1]=="files" else w["bw_bytes"]/2**20
    cpu=(j["usr_cpu"]+j["sys_cpu"])/100*j["job_runtime"]/1000
    print("%.0f %.3f" % (rate, cpu/2))
except Exception:
    print("fail -")' "$kind"
}

# through_mount NAME KIND ARGS...: fio through the mount; the rate, and
# the CPU of server, mount and fio per GiB or per 1,000 files.
through_mount() {
	local name=$1 kind=$2 s0 m0 s1 m1 out
	shift 2
	s0=$(cpu_ticks "$server_pid") m0=$(cpu_ticks "$mount_pid")
	out=$(fio_run "$kind" "$@")
	s1=$(cpu_ticks "$server_pid") m1=$(cpu_ticks "$mount_pid")
	row "$name" "${out% *}" "$(per "$s0" "$s1" 2)" "$(per "$m0" "$m1" 2)" "${out#* }"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores; old=$old new=$new"
printf 'round\tbinary\tmeasure\trate\tserver CPU\tmount CPU\tclient CPU\n'
echo "# rates: MiB/s (files/s for small-write); CPU seconds per GiB (per 1,000 files for small-write)"
for round in $(seq "$rounds"); do
	order="old new"
	[ $((round % 2)) = 0 ] && order="new old"
	for bin in $order; do
		b=$old
		[ "$bin" = new ] && b=$new
		SERVER_BIN=$b start_server b3 "$work/data" "$work/server.log" # sets endpoint, server_pid
		"$b" bench peak --endpoint "$endpoint" --bucket "$bucket" --count 1 --duration 0 --sizes 1KiB \
			--concurrency 1 --ops upload --charts=false --out "$work/bench" >/dev/null 2>&1
		row load "$(cut -d' ' -f1 /proc/loadavg)" - - -
		api "$b"
		mount_bin "$b"
		mkdir -p "$work/mnt/seq"
		through_mount mount-write-1job gib --name=seq --directory="$work/mnt/seq" --rw=write --bs=1M \
			--numjobs=1 --size=2g --fallocate=none --end_fsync=1
		if [ "${SMALL:-0}" = 1 ]; then
			mkdir -p "$work/mnt/small"
			through_mount small-write files --name=small --directory="$work/mnt/small" --rw=write --bs=128k \
				--filesize=128k --nrfiles=125 --numjobs=16 --openfiles=1 --file_service_type=sequential \
				--create_on_open=1 --fallocate=none --fsync_on_close=1 --group_reporting
		fi
		unmount_b3 "$work/mnt"
		stop_server
		rm -rf "$work/data"
	done
done
echo "# medians (rate, server CPU, mount CPU, client CPU)"
print_medians "$results"
