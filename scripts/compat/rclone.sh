#!/bin/sh
# rclone's S3 backend integration tests (fstests, `go test ./backend/s3
# -remote TestS3:`) against a real b3 server on loopback, through an
# "Other"-provider S3 remote. Usage:
#   scripts/compat/rclone.sh                       # latest rclone
#   RCLONE_VERSION=v1.76.0 TIMEOUT=30m scripts/compat/rclone.sh
# Needs Go and the Go module proxy. Prints the failing (sub)tests and the
# counts of passed/failed/skipped (sub)tests; the full `go test -v` output
# is kept as $OUT (default /tmp/b3-compat-rclone.log).
#
# QUIRKS=aws (default) states in the remote what b3 does as AWS does and
# rclone's "Other" provider does not assume: ListObjectsV2, url-encoded
# listings (keys with control characters), multipart ETags, and 200 for a
# CreateBucket of a bucket one already owns (us-east-1). QUIRKS=other keeps
# the "Other" provider's conservative defaults.
. "$(dirname "$0")/lib.sh"
RCLONE_VERSION="${RCLONE_VERSION:-latest}"
TIMEOUT="${TIMEOUT:-30m}"
OUT="${OUT:-/tmp/b3-compat-rclone.log}"

dir=$(module_dir github.com/rclone/rclone "$RCLONE_VERSION")
echo "rclone source: $dir"
# The module cache is read-only: the test runs in a writable copy.
src="$COMPAT_TMP/rclone"
cp -r "$dir" "$src"
chmod -R u+w "$src"
(cd "$src" && go test -c -o "$COMPAT_TMP/s3.test" ./backend/s3)

start_b3 "$@"

conf="$COMPAT_TMP/rclone.conf"
cat >"$conf" <<CONF
[TestS3]
type = s3
provider = Other
env_auth = false
access_key_id = $B3_AK
secret_access_key = $B3_SK
endpoint = $B3_ENDPOINT
region = us-east-1
force_path_style = true
CONF
if [ "${QUIRKS:-aws}" = aws ]; then
	cat >>"$conf" <<CONF
list_version = 2
list_url_encode = true
use_multipart_etag = true
use_already_exists = true
CONF
fi

echo "running rclone's S3 integration tests (timeout $TIMEOUT), log $OUT"
set +e
(cd "$src/backend/s3" && RCLONE_CONFIG="$conf" timeout "$TIMEOUT" \
	"$COMPAT_TMP/s3.test" -test.v -test.timeout "$TIMEOUT" -remote TestS3: ${RCLONE_TEST_ARGS:-}) >"$OUT" 2>&1
rc=$?
set -e
[ $rc = 124 ] && echo "TIMED OUT after $TIMEOUT (counts below are what finished)"
grep -E '^\s*--- FAIL' "$OUT" || true
pass=$(grep -cE '^\s*--- PASS' "$OUT" || true)
fail=$(grep -cE '^\s*--- FAIL' "$OUT" || true)
skip=$(grep -cE '^\s*--- SKIP' "$OUT" || true)
# A failing subtest also fails its parents: leaves are the tests whose
# names no other failing test's name starts with.
leaf=$(grep -E '^\s*--- FAIL' "$OUT" | awk '{print $3}' | sort | awk 'NR>1 && index($0, prev"/")!=1 {print prev} {prev=$0} END {if (NR) print prev}' | wc -l)
echo "rclone s3 (tests and subtests): PASS $pass  FAIL $fail (leaves $leaf)  SKIP $skip  exit $rc"
