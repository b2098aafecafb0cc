#!/usr/bin/env bash
# b3 against MinIO on this machine: the same `b3 bench` runs against each
# server in turn, started alone (never both at once) on a fresh data
# directory for every phase, with the page cache dropped before each. Writes every JSON,
# CSV and SVG into OUT/<server>/, the servers' logs into OUT/, and
# OUT/compare-<phase>.txt from `b3 bench compare` (ratios are b3 over MinIO:
# MB/s above 1 means b3 moves more; p99 below 1 means b3 waits less).
#
#   scripts/perf/compare-minio.sh [--smoke] [OUT]       (default OUT: /tmp/b3-perf/compare-<time>)
#
# Environment (defaults in brackets):
#   MINIO_BIN    [/tmp/minio-bin/minio]  build it outside the repository:
#                cd /tmp && GOBIN=/tmp/minio-bin go install github.com/minio/minio@latest
#   B3_BIN       [built from this checkout]
#   WORK         [/tmp/b3-perf]   data directories go under it (fresh each run)
#   SERVERS      [b3 minio]       PHASES [peak mixed]
#   PEAK_ARGS    [the issue's cells: 4KiB,1MiB,64MiB x concurrency 1,16,64, up and down, 10 s cells]
#   MIXED_ARGS   [baseline preset, multipliers 1,1.25,2,4,6,8, 20 s holds, 10 s drain, at most 512 in flight]
#   PEAK_LIMIT / MIXED_LIMIT [900 / 600]  seconds before a phase is interrupted
#
# Bounded: each phase by its limit (SIGINT, partial results kept), server
# start by 60 s, server stop by 45 s. Needs ~60 GB free under WORK. --smoke runs tiny phases (~1 minute in
# all) to prove the pipeline, not to measure anything.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

smoke=false
if [ "${1:-}" = --smoke ]; then smoke=true; shift; fi
work=${WORK:-/tmp/b3-perf}
out=${1:-$work/compare-$(date +%Y%m%d-%H%M%S)}
MINIO_BIN=${MINIO_BIN:-/tmp/minio-bin/minio}
servers=${SERVERS:-b3 minio}
phases=${PHASES:-peak mixed}

if $smoke; then
	peak_args=${PEAK_ARGS:---sizes 4KiB,1MiB --concurrency 1,4 --duration 1s --prepare-bytes 8MiB --verify}
	mixed_args=${MIXED_ARGS:---size 256KiB --upload-rate 8 --download-rate 4 --multipliers 1,2 --duration 2s --drain 5s --download-objects 8 --verify}
	peak_limit=${PEAK_LIMIT:-120} mixed_limit=${MIXED_LIMIT:-60}
else
	peak_args=${PEAK_ARGS:---sizes 4KiB,1MiB,64MiB --concurrency 1,16,64 --ops upload,download --duration 10s --drop-cache}
	mixed_args=${MIXED_ARGS:---preset baseline --multipliers 1,1.25,2,4,6,8 --duration 20s --drain 10s --max-inflight 512}
	peak_limit=${PEAK_LIMIT:-900} mixed_limit=${MIXED_LIMIT:-600}
fi

mkdir -p "$out" "$work" || die "cannot create $out"
# A sustained mixed run at x8 writes ~19 GB in 20 s; b3 frees deleted space
# only at its next vacuum, so a full run can hold ~55 GB at once.
free_gb=$(df -BG --output=avail "$work" | tail -1 | tr -dc 0-9)
if ! $smoke && [ "$free_gb" -lt 60 ]; then
	log "warning: only ${free_gb} GB free under $work; the mixed phase may fill the disk (shorten MIXED_ARGS)"
fi
build_b3 "$work"
trap 'stop_server' EXIT
trap 'log interrupted; exit 130' INT TERM
{
	echo "started: $(date -Is)"
	echo "host: $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	echo "b3: $B3_BIN ($(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown))"
	echo "minio: $MINIO_BIN ($("$MINIO_BIN" --version 2>/dev/null | head -1 || echo missing))"
	echo "peak: $peak_args"
	echo "mixed: $mixed_args"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/run.txt"

# Each phase gets a freshly started server on an empty data directory: no
# phase measures what an earlier one left behind (b3 reclaims deleted
# objects' space only when its vacuum runs).
for server in $servers; do
	for phase in $phases; do
		case $phase in
		peak) args=$peak_args limit=$peak_limit ;;
		mixed) args=$mixed_args limit=$mixed_limit ;;
		*) die "unknown phase $phase" ;;
		esac
		drop_caches
		start_server "$server" "$work/data-$server" "$out/$server-$phase-server.log"
		log "$server: $phase ($args), at most ${limit}s"
		# shellcheck disable=SC2086 # the argument lists are meant to split
		bench "$limit" "$phase" --endpoint "$endpoint" --access-key "$access_key" --secret-key "$secret_key" \
			--bucket b3-perf --local --pid "$server_pid" --out "$out/$server" $args >"$out/$server-$phase.txt"
		cat "$out/$server-$phase.txt"
		stop_server
		du -sh "$work/data-$server" | sed 's/^/data left on disk: /' >>"$out/$server-$phase-server.log"
		rm -rf "$work/data-$server"
	done
done

# Compare with the last server listed (MinIO by default) as the base, so
# that the ratios read "b3 over MinIO": above 1 is more b3 throughput (or
# more b3 latency, in the p99 column).
read -r -a list <<<"$servers"
order=("${list[@]: -1}" "${list[@]:0:${#list[@]}-1}")
for phase in $phases; do
	reports=() names=()
	for server in "${order[@]}"; do
		r=$(latest "$out/$server" "$phase")
		if [ -n "$r" ]; then reports+=("$r") names+=("$server"); fi
	done
	if [ ${#reports[@]} -ge 2 ]; then
		"$B3_BIN" bench compare --names "$(IFS=,; echo "${names[*]}")" "${reports[@]}" >"$out/compare-$phase.txt" 2>&1
		cat "$out/compare-$phase.txt"
	else
		log "note: $phase: fewer than two reports, nothing to compare"
	fi
done
echo "finished: $(date -Is)" >>"$out/run.txt"
log "results in $out"
