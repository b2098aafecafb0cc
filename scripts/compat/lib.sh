# Shared by the scripts in scripts/compat/ (sourced, not run): build b3,
# start it on loopback in a temp dir with the legacy-compatible settings,
# stop it. Not part of CI: see docs/COMPATIBILITY.md.
#
# After start_b3: B3_PORT, B3_ADMIN_PORT, B3_ENDPOINT (http://127.0.0.1:port),
# B3_AK, B3_SK (root keys), COMPAT_TMP (removed on exit unless KEEP=1),
# B3_LOG (the server's log).
set -eu
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
COMPAT_TMP="$(mktemp -d /tmp/b3-compat.XXXXXX)"
B3_BIN="${B3_BIN:-$COMPAT_TMP/b3}"
B3_PID=""

cleanup() {
	stop_b3
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $COMPAT_TMP"; else rm -rf "$COMPAT_TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port: a TCP port nobody listens on now (loopback).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

build_b3() {
	if [ ! -x "$B3_BIN" ]; then
		echo "building b3 into $B3_BIN"
		(cd "$REPO" && go build -o "$B3_BIN" ./cmd/b3)
	fi
}

# start_b3 [extra server flags...]
start_b3() {
	build_b3
	B3_PORT=$(free_port)
	B3_ADMIN_PORT=$(free_port)
	B3_ENDPOINT="http://127.0.0.1:$B3_PORT"
	B3_AK=compatroot
	B3_SK=compatroot-secret-key-0123456789
	B3_LOG="$COMPAT_TMP/b3.log"
	mkdir -p "$COMPAT_TMP/data"
	B3_SECRET_KEY="$B3_SK" "$B3_BIN" server \
		--data "$COMPAT_TMP/data" \
		--address "127.0.0.1:$B3_PORT" \
		--admin-address "127.0.0.1:$B3_ADMIN_PORT" \
		--console-address "" \
		--drain-delay 0s \
		--access-key "$B3_AK" \
		--default-object-ownership ObjectWriter \
		--default-block-public-access=false \
		"$@" >"$B3_LOG" 2>&1 &
	B3_PID=$!
	i=0
	until curl -fsS "http://127.0.0.1:$B3_ADMIN_PORT/health/ready" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$B3_PID" 2>/dev/null; then
			echo "b3 did not start; its log:" >&2
			cat "$B3_LOG" >&2
			exit 1
		fi
		sleep 0.1
	done
	echo "b3 (pid $B3_PID) on $B3_ENDPOINT, log $B3_LOG"
}

stop_b3() {
	if [ -n "$B3_PID" ] && kill -0 "$B3_PID" 2>/dev/null; then
		kill "$B3_PID"
		wait "$B3_PID" 2>/dev/null || true
	fi
	B3_PID=""
}

# add_user NAME: prints "ACCESS_KEY SECRET_KEY" of a new user.
add_user() {
	"$B3_BIN" admin users add "$1" --url "http://127.0.0.1:$B3_ADMIN_PORT" --data "$COMPAT_TMP/data" |
		awk '/^access key:/ {a=$3} /^secret key:/ {s=$3} END {print a, s}'
}

# module_dir MODULE VERSION: downloads MODULE@VERSION through the Go module
# proxy and prints its (read-only) directory in the module cache; the
# version resolved goes to stderr.
module_dir() {
	(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$1@$2") |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["Dir"]); print(d["Version"], file=sys.stderr)'
}
