#!/bin/sh
# minio-go's functional tests (functional_tests.go, what MinIO's mint runs)
# against a real b3 server on loopback. Usage:
#   scripts/compat/minio-go.sh            # latest minio-go/v7
#   MINIO_GO_VERSION=v7.4.1 TIMEOUT=40m scripts/compat/minio-go.sh
# Needs Go and network access to the Go module proxy. Prints one line per
# failing function and a summary of PASS/FAIL/NA; the full JSON log is kept
# as $OUT (default /tmp/b3-compat-minio-go.log). ENABLE_HTTPS=1 serves S3
# over TLS with a self-signed certificate (openssl; the suite is told to
# skip verification), which the suite's SSE-C tests need.
. "$(dirname "$0")/lib.sh"
MINIO_GO_VERSION="${MINIO_GO_VERSION:-latest}"
TIMEOUT="${TIMEOUT:-40m}"
OUT="${OUT:-/tmp/b3-compat-minio-go.log}"

dir=$(module_dir github.com/minio/minio-go/v7 "$MINIO_GO_VERSION")
echo "minio-go source: $dir"
mod="$COMPAT_TMP/mint"
mkdir -p "$mod"
# The file carries the build tag "mint" (package main next to package minio):
# it is built as its own module without the tag, which would make the
# minio package it imports ambiguous.
grep -v '^//go:build mint' "$dir/functional_tests.go" >"$mod/main.go"
(
	cd "$mod"
	go mod init b3compat/mint >/dev/null 2>&1
	ver=$(basename "$dir" | sed 's/.*@//')
	GOFLAGS=-mod=mod go get "github.com/minio/minio-go/v7@$ver" >/dev/null 2>&1
	GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
	go build -o "$COMPAT_TMP/mint-functional" .
)

# The tests create buckets in these regions (and sign for them).
ENABLE_HTTPS="${ENABLE_HTTPS:-0}"
if [ "$ENABLE_HTTPS" = 1 ]; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$COMPAT_TMP/tls.key" -out "$COMPAT_TMP/tls.crt" 2>/dev/null
	set -- --tls-cert "$COMPAT_TMP/tls.crt" --tls-key "$COMPAT_TMP/tls.key" "$@"
fi
start_b3 --regions "${REGIONS:-eu-central-1,us-west-2,eu-west-1}" "$@"

echo "running minio-go functional tests (timeout $TIMEOUT), log $OUT"
set +e
(
	cd "$COMPAT_TMP"
	SERVER_ENDPOINT="127.0.0.1:$B3_PORT" ACCESS_KEY="$B3_AK" SECRET_KEY="$B3_SK" \
		ENABLE_HTTPS="$ENABLE_HTTPS" SKIP_CERT_VALIDATION=1 MINT_MODE=full RUN_ON_FAIL=1 ENABLE_KMS="${ENABLE_KMS:-}" MINT_DATA_DIR="${MINT_DATA_DIR:-}" \
		timeout "$TIMEOUT" "$COMPAT_TMP/mint-functional"
) >"$OUT" 2>&1
rc=$?
set -e
[ $rc = 124 ] && echo "TIMED OUT after $TIMEOUT (counts below are what finished)"

# One JSON line per function: {"name":..,"function":..,"status":"PASS|FAIL|NA","error":..}
# One JSON line per result: {"name":"minio-go: testX",...,"status":"PASS|FAIL|NA"}.
# With RUN_ON_FAIL=1 a function goes on after a failure and may log several
# FAILs (and a PASS at its end): a function counts as FAIL if any of its
# lines is a FAIL, else PASS if one is, else NA.
python3 - "$OUT" <<'PY'
import json, sys
status = {}; first = {}; nfail = {}
for line in open(sys.argv[1], errors="replace"):
    line = line.strip()
    if not line.startswith("{"):
        continue
    try:
        d = json.loads(line)
    except ValueError:
        continue
    st = d.get("status"); name = d.get("name", "?").replace("minio-go: ", "")
    if st not in ("PASS", "FAIL", "NA"):
        continue
    if st == "FAIL":
        nfail[name] = nfail.get(name, 0) + 1
        first.setdefault(name, d)
    rank = {"NA": 0, "PASS": 1, "FAIL": 2}
    if rank[st] >= rank.get(status.get(name, "NA"), 0):
        status[name] = st
for name, d in first.items():
    msg = (d.get("message") or "").strip()
    err = (d.get("error") or "").replace("\n", " ")
    print("FAIL %s (%d failed checks): %s: %s %s" % (name, nfail[name], d.get("function", ""), msg, err[:240]))
c = {k: sum(1 for v in status.values() if v == k) for k in ("PASS", "FAIL", "NA")}
print("minio-go functional (functions): PASS %d  FAIL %d  NA %d" % (c["PASS"], c["FAIL"], c["NA"]))
PY
tail -3 "$OUT" | grep -v "^{" || true
