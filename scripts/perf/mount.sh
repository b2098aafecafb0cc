#!/bin/bash
# Measures b3 mount against s3fs and rclone mount (Debian packages) and
# against the S3 API itself (b3 bench, the ceiling), back to back on one
# b3 server, alternating the tools within each round:
#   - fio sequential write, then read, of 2 GiB in 1 MiB blocks: one job
#     (one 2 GiB file) and four jobs (four 512 MiB files);
#   - 2,000 files of 128 KiB written, then read, by 16 fio jobs;
#   - the peak resident memory (VmHWM) of the mount process per round.
# Every read is measured twice: "cold", after the page cache was dropped,
# so the server reads its disk, and then "warm", the same files again with
# the server's data in the page cache (fio still drops the client's cached
# pages of each file first: --invalidate=1, its default). The S3 API's
# downloads are measured warm (the objects were just uploaded) and, for the
# large objects, cold (b3 bench --drop-cache, each object read once): a
# ratio compares a mount with the API in the same state.
# Prints one line per measurement (TSV) and the medians; records the load
# average beside each tool's block.
#
# usage: [TOOLS="b3 s3fs rclone"] [API=0] scripts/perf/mount.sh [rounds]
#        (root; fio, s3fs, rclone, fuse3, aws CLI)
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${WORK:-/tmp/b3-perf-mount}
port=${PORT:-19400}
ak=PERFACCESSKEY0000000 sk=perf/secret/key/00000000000000000000000
endpoint=http://127.0.0.1:$port
bucket=perf
tools=${TOOLS:-"b3 s3fs rclone"}
export AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk AWS_REGION=us-east-1

for t in fio s3fs rclone fusermount3; do command -v $t >/dev/null || { echo "missing $t" >&2; exit 1; }; done
rm -rf "$work" && mkdir -p "$work/data" "$work/mnt"
(cd "$root" && go build -o "$work/b3" ./cmd/b3)
# No web console: its default port may be taken by another b3 on the machine.
B3_CONSOLE_ADDRESS="" B3_ADMIN_TOKEN=perf-admin-token-0000 B3_ACCESS_KEY=$ak B3_SECRET_KEY=$sk "$work/b3" server --data "$work/data" --address 127.0.0.1:$port \
	--admin-address 127.0.0.1:$((port + 1)) >"$work/server.log" 2>&1 &
server=$!
mpid=""
cleanup() {
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null || true
	fusermount3 -u -z "$work/mnt" 2>/dev/null || true
	kill "$server" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 600); do
	curl -s -o /dev/null "$endpoint" && break
	kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
	sleep 0.1
done
aws --endpoint-url "$endpoint" s3 mb "s3://$bucket" >/dev/null
echo "$ak:$sk" >"$work/passwd" && chmod 600 "$work/passwd"

# empty_bucket deletes every object and has vacuum return their space at
# once: without it every round's bytes stayed on disk as dead segments (a
# 3-round run left about 50 GB).
empty_bucket() {
	aws --endpoint-url "$endpoint" s3 rm --recursive --quiet "s3://$bucket/"
	local admin=("$work/b3" admin --endpoint "http://127.0.0.1:$((port + 1))" --token perf-admin-token-0000)
	"${admin[@]}" vacuum start 0.01 >/dev/null || true # 409: a pass is already running
	for _ in $(seq 600); do
		"${admin[@]}" vacuum status --json | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)["running"])' && break
		sleep 1
	done
}

results="$work/results.tsv"
: >"$results"
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$1" "$2" "$3" "$4" | tee -a "$results"; }
load() { cut -d' ' -f1 /proc/loadavg; }

mountpoint_up() {
	for _ in $(seq 200); do
		grep -q " $work/mnt " /proc/mounts && return 0
		sleep 0.1
	done
	echo "mount did not come up" >&2
	return 1
}

mount_tool() {
	case $1 in
	b3)
		"$work/b3" mount --endpoint "$endpoint" "$bucket" "$work/mnt" >"$work/b3mount.log" 2>&1 &
		;;
	s3fs)
		s3fs "$bucket" "$work/mnt" -f -o url="$endpoint" -o use_path_request_style \
			-o passwd_file="$work/passwd" >"$work/s3fs.log" 2>&1 &
		;;
	rclone)
		# Without its write cache rclone refuses fio's O_RDWR opens.
		# rclone's SDK cannot load an AWS_CA_BUNDLE into its own transport.
		env -u AWS_CA_BUNDLE RCLONE_CONFIG_B3_TYPE=s3 RCLONE_CONFIG_B3_PROVIDER=Other RCLONE_CONFIG_B3_ENDPOINT="$endpoint" \
			RCLONE_CONFIG_B3_ACCESS_KEY_ID=$ak RCLONE_CONFIG_B3_SECRET_ACCESS_KEY=$sk \
			rclone mount --vfs-cache-mode writes "b3:$bucket" "$work/mnt" >"$work/rclone.log" 2>&1 &
		;;
	esac
	mpid=$!
	mountpoint_up
}

unmount_tool() {
	fusermount3 -u "$work/mnt" || { sleep 2; fusermount3 -u -z "$work/mnt"; }
	wait "$mpid" 2>/dev/null || true
	mpid=""
	empty_bucket
}

# fio_mibs JOB-ARGS... prints the bandwidth in MiB/s.
fio_mibs() {
	{ fio --output-format=json "$@" 2>>"$work/fio.err" || true; } | python3 -c '
import json,sys
try:
    j=json.load(sys.stdin)["jobs"][0]
    rw="write" if j["write"]["io_bytes"] else "read"
    print("fail" if j["error"] else "%.0f" % (j[rw]["bw_bytes"]/2**20))
except Exception:
    print("fail")'
}

# fio_files JOB-ARGS... prints files per second (2,000 files).
fio_files() {
	{ fio --output-format=json "$@" 2>>"$work/fio.err" || true; } | python3 -c '
import json,sys
try:
    j=json.load(sys.stdin)["jobs"][0]
    rw="write" if j["write"]["io_bytes"] else "read"
    print("fail" if j["error"] else "%.0f" % (2000/(j[rw]["runtime"]/1000)))
except Exception:
    print("fail")'
}

seq_job() { # rw jobs size
	echo --name=seq --directory="$work/mnt/seq" --rw="$1" --bs=1M --numjobs="$2" --size="$3" \
		--fallocate=none --group_reporting --end_fsync=1
}
# Writes end with fsync (end_fsync, fsync_on_close): a mount that uploads
# at close (s3fs) is timed with its upload, as b3 mount's close is.
small_job() { # rw
	echo --name=small --directory="$work/mnt/small" --rw="$1" --bs=128k --filesize=128k --nrfiles=125 \
		--numjobs=16 --openfiles=1 --file_service_type=sequential --create_on_open=1 --fallocate=none \
		--fsync_on_close=1 --group_reporting
}

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

run_mount() {
	local tool=$1
	mount_tool "$tool"
	record "$tool" load 1min "$(load)"
	mkdir -p "$work/mnt/seq" "$work/mnt/small"
	# shellcheck disable=SC2046
	record "$tool" write-1job MiB/s "$(fio_mibs $(seq_job write 1 2g))"
	drop
	# shellcheck disable=SC2046
	record "$tool" read-1job-cold MiB/s "$(fio_mibs $(seq_job read 1 2g))"
	# shellcheck disable=SC2046
	record "$tool" read-1job-warm MiB/s "$(fio_mibs $(seq_job read 1 2g))"
	rm -f "$work/mnt/seq/"*
	# shellcheck disable=SC2046
	record "$tool" write-4jobs MiB/s "$(fio_mibs $(seq_job write 4 512m))"
	drop
	# shellcheck disable=SC2046
	record "$tool" read-4jobs-cold MiB/s "$(fio_mibs $(seq_job read 4 512m))"
	# shellcheck disable=SC2046
	record "$tool" read-4jobs-warm MiB/s "$(fio_mibs $(seq_job read 4 512m))"
	# shellcheck disable=SC2046
	record "$tool" small-write files/s "$(fio_files $(small_job write))"
	drop
	# shellcheck disable=SC2046
	record "$tool" small-read-cold files/s "$(fio_files $(small_job read))"
	# shellcheck disable=SC2046
	record "$tool" small-read-warm files/s "$(fio_files $(small_job read))"
	record "$tool" peak-rss MiB "$(awk '/VmHWM/ {printf "%.0f", $2/1024}' /proc/$mpid/status)"
	unmount_tool
}

# bench ARGS... prints "op ops/s MB/s" per operation of b3 bench peak
# (uploads and warm downloads unless ARGS say otherwise).
bench() {
	"$work/b3" bench peak --endpoint "$endpoint" --bucket "$bucket" --create-bucket=false --charts=false \
		--out "$work/bench" --duration 0 --ops upload,download "$@" 2>/dev/null |
		awk '$1=="upload"||$1=="download" {print $1, $6, $7}'
}

# bench_cold SIZE CONCURRENCY: downloads of SIZE objects after the page
# cache was dropped, each object once (the bench prepares CONCURRENCY of
# them); prints MiB/s.
bench_cold() {
	bench --ops download --drop-cache --sizes "$1" --concurrency "$2" --count "$2" --prepare-bytes 2GiB |
		awk '{printf "%.0f", $3*1e6/2^20}'
}

run_bench() {
	record api load 1min "$(load)"
	bench --sizes 2GiB --concurrency 1 --count 2 --prepare-bytes 2GiB | while read -r op ops mbs; do
		record api "$op-1job" MiB/s "$(echo "$mbs" | awk '{printf "%.0f", $1*1e6/2^20}')"
	done
	bench --sizes 512MiB --concurrency 4 --count 8 --prepare-bytes 2GiB | while read -r op ops mbs; do
		record api "$op-4jobs" MiB/s "$(echo "$mbs" | awk '{printf "%.0f", $1*1e6/2^20}')"
	done
	record api download-1job-cold MiB/s "$(bench_cold 2GiB 1)"
	record api download-4jobs-cold MiB/s "$(bench_cold 512MiB 4)"
	bench --sizes 128KiB --concurrency 16 --count 2000 --prepare-bytes 256MiB | while read -r op ops mbs; do
		record api "small-$op" files/s "$(echo "$ops" | awk '{printf "%.0f", $1}')"
	done
	empty_bucket
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/2^20}' /proc/meminfo), kernel $(uname -r)"
printf 'round\ttool\tmeasure\tunit\tvalue\n'
for round in $(seq "$rounds"); do
	# Alternate the order from round to round.
	order=$tools
	[ $((round % 2)) = 0 ] && order=$(echo "$tools" | tr ' ' '\n' | tac | tr '\n' ' ')
	[ "${API:-1}" = 1 ] && run_bench
	for tool in $order; do run_mount "$tool"; done
done
echo "# medians"
python3 - "$results" <<'PY'
import sys, statistics, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, tool, measure, unit, value = line.rstrip("\n").split("\t")
    v[(tool, measure, unit)].append(value)
for k in sorted(v):
    nums = [float(x) for x in v[k] if x not in ("", "fail")]
    med = "%g" % statistics.median(nums) if nums else "fail"
    print("\t".join(k) + "\t" + med + "\t(" + " ".join(v[k]) + ")")
PY
