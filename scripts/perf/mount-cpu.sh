#!/bin/bash
# Where the CPU goes when one reader reads one 2 GiB object, warm in the
# server's page cache, through `b3 mount` (fio, one job, 1 MiB blocks) and
# straight from the S3 API (curl of a presigned URL: one GET into
# /dev/null, the leanest client there is), alternated, the order flipped
# every round. Per path and round: MiB/s, and CPU seconds per GiB of the
# server, of the client side (the mount and fio, or curl) and of the whole
# machine (/proc/stat: everything but idle and iowait).
#
# With PROFILE=1, one more read through the mount with the mount process
# under `perf record -g`: where its CPU went (kernel or its own code), and
# the symbols that took the most (self time).
#
# usage: [PROFILE=1] scripts/perf/mount-cpu.sh [rounds]   (root; fio, fuse3, aws CLI, curl)
# Wrap it in the shared lock on a shared machine (-o: the server and mount
# it starts must not inherit the lock):
#   flock -o /tmp/b3-measure.lock scripts/perf/mount-cpu.sh 4
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
rounds=${1:-4}
work=${WORK:-/tmp/b3-perf-mount-cpu}
bucket=perf
tools=(fio fusermount3 aws curl /usr/bin/time)
[ "${PROFILE:-0}" = 1 ] && tools+=(perf)
for t in "${tools[@]}"; do command -v "$t" >/dev/null || die "missing $t"; done
rm -rf "$work" && mkdir -p "$work/mnt"
build_b3 "$work"
export AWS_ACCESS_KEY_ID=$access_key AWS_SECRET_ACCESS_KEY=$secret_key AWS_REGION=us-east-1
cleanup() {
	stop_mount "$work/mnt"
	stop_server
	rm -rf "$work/data"
}
trap cleanup EXIT
start_server b3 "$work/data" "$work/server.log"
aws --endpoint-url "$endpoint" s3 mb "s3://$bucket" >/dev/null
mount_b3 "$B3_BIN" "$endpoint" "$bucket" "$work/mnt" "$work/mount.log"
log "writing the 2 GiB object through the mount"
fio --name=w --filename="$work/mnt/big" --rw=write --bs=1M --size=2g --fallocate=none --end_fsync=1 >/dev/null
url=$(aws --endpoint-url "$endpoint" s3 presign "s3://$bucket/big" --expires-in 3600)
hz=$(getconf CLK_TCK)
gib=2

# machine_ticks: the machine's busy clock ticks so far (all CPUs).
machine_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9; exit}' /proc/stat; }

# read_path PATH: one read of the object; prints MiB/s and the client's
# user+system seconds (from /usr/bin/time).
read_path() {
	local start end
	start=$(date +%s.%N)
	case $1 in
	mount) /usr/bin/time -f "%U %S" -o "$work/time" fio --name=r --filename="$work/mnt/big" --rw=read \
		--bs=1M --size=2g >/dev/null ;;
	api) /usr/bin/time -f "%U %S" -o "$work/time" curl -sf -o /dev/null "$url" ;;
	esac
	end=$(date +%s.%N)
	echo "$start $end $gib" | awk '{printf "%.0f ", $3*1024/($2-$1)}'
	awk '{printf "%.2f\n", $1+$2}' "$work/time"
}

printf '# %s %s cores; b3 %s\n' "$(date -u +%FT%TZ)" "$(nproc)" "$("$B3_BIN" version 2>/dev/null | head -1)"
printf 'round\tpath\tMiB/s\tserver s/GiB\tclient s/GiB\tmachine s/GiB\tload\n'
read_path mount >/dev/null # the server's page cache, and the mount's pools, warm
for round in $(seq "$rounds"); do
	order="mount api"
	[ $((round % 2)) = 0 ] && order="api mount"
	for path in $order; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		s0=$(cpu_ticks "$server_pid") m0=$(cpu_ticks "$mount_pid") c0=$(machine_ticks)
		read -r rate client < <(read_path "$path")
		s1=$(cpu_ticks "$server_pid") m1=$(cpu_ticks "$mount_pid") c1=$(machine_ticks)
		mount_s=0
		[ "$path" = mount ] && mount_s=$(echo "$m0 $m1 $hz" | awk '{print ($2-$1)/$3}')
		echo "$round $path $rate $s0 $s1 $client $mount_s $c0 $c1 $hz $gib $load" | awk '{
			printf "%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%s\n", $1, $2, $3, ($5-$4)/$10/$11, ($6+$7)/$11, ($9-$8)/$10/$11, $12}'
	done
done

if [ "${PROFILE:-0}" = 1 ]; then
	log "profiling the mount process during one more read"
	fio --name=r --filename="$work/mnt/big" --rw=read --bs=1M --size=2g >/dev/null &
	fio_pid=$!
	sleep 0.3
	perf record -g -p "$mount_pid" -o "$work/perf.data" -- sleep 1 >/dev/null 2>&1
	wait "$fio_pid"
	echo "# the mount process during a read: share of its CPU by where it ran, then by symbol (self time)"
	perf report -i "$work/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null | awk '/^ +[0-9.]+%/'
	perf report -i "$work/perf.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null |
		awk '/^ +[0-9.]+%/ && n++ < 20'
fi
