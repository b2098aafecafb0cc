#!/bin/sh
# Ceph's s3-tests (s3tests/functional/test_s3.py, boto3, pytest) against a
# real b3 server on loopback. Usage:
#   S3TESTS_DIR=/path/to/s3-tests scripts/compat/s3-tests.sh
#   S3TESTS_DIR=... S3TESTS_ARGS='-k test_bucket_list' scripts/compat/s3-tests.sh
#   S3TESTS_DIR=... LIST=scripts/compat/s3-tests-issue31.txt scripts/compat/s3-tests.sh
# S3TESTS_DIR is a checkout of github.com/ceph/s3-tests (without it the
# script clones it with git). Python packages go into a venv under
# ${XDG_CACHE_HOME:-~/.cache}/b3-compat/s3tests-venv (pip, PyPI).
#
# The selection (docs/COMPATIBILITY.md): every test of test_s3.py except
# those marked as failing on AWS itself and those of RGW-only features
# (bucket logging, cloud tiering, IAM accounts):
MARKERS="${MARKERS:-not fails_on_aws and not bucket_logging and not bucket_logging_cleanup and not fails_without_logging_rollover and not cloud_transition and not cloud_restore and not target_by_bucket and not iam_user and not iam_account}"
# LIST=FILE runs the tests named in FILE (one test name a line) instead of
# a marker selection. scripts/compat/s3-tests-issue31.txt is issue 31's
# "fixed selection of 522", as pinned in docs/COMPATIBILITY.md: the tests
# that -m 'not fails_on_aws and not lifecycle' selects at s3-tests commit
# 73b430a (2025-09-15); all of them are in test_s3.py at 8f0ae7b.
# ISSUE31_LIST (default that file) is counted apart in the summary, for a
# run of any selection: the issue's count is read off a wider run too.
LIST="${LIST:-}"
ISSUE31_LIST="${ISSUE31_LIST:-$(cd "$(dirname "$0")" && pwd)/s3-tests-issue31.txt}"
. "$(dirname "$0")/lib.sh"
TIMEOUT="${TIMEOUT:-60m}"
OUT="${OUT:-/tmp/b3-compat-s3-tests.log}"
XML="${OUT%.log}.xml"

src="${S3TESTS_DIR:-}"
if [ -z "$src" ]; then
	src="$COMPAT_TMP/s3-tests"
	git clone -q --depth 1 https://github.com/ceph/s3-tests "$src"
fi
echo "s3-tests: $src ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/b3-compat/s3tests-venv"
if ! "$venv/bin/python" -c 'import boto3, munch, isodate, pytest, lxml, httplib2, pytz, yaml' 2>/dev/null; then
	echo "creating $venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q boto3 botocore munch isodate requests pytz httplib2 lxml pytest PyYAML
fi

# Lifecycle tests expect a debug day of lc_debug_interval (10) seconds;
# test_object_lock_put_obj_retention retains until 2140, beyond the default
# --max-retention (100 years).
# The SSE-KMS tests name the keys testkey-1 and testkey-2 (the suite's
# defaults for kms_keyid and kms_keyid2): the key ring holds them.
kms_key() { head -c32 /dev/urandom | base64; }
start_b3 --lifecycle-day 10s --lifecycle-interval 2s --max-retention 50000d \
	--kms-keys "testkey-1:$(kms_key),testkey-2:$(kms_key)" "$@"

# Users: main, alt and tenant are plain users; the iam sections are only
# read (IAM tests are outside the selection).
conf="$COMPAT_TMP/s3tests.conf"
user_section() { # SECTION NAME
	set -- "$1" "$2" $(add_user "$2")
	id=$("$B3_BIN" admin users list --url "http://127.0.0.1:$B3_ADMIN_PORT" --data "$COMPAT_TMP/data" |
		awk -v k="$3" '$1 == k {print $NF}')
	cat <<SEC
[$1]
display_name = $2
user_id = $id
email = $2@example.com
access_key = $3
secret_key = $4
SEC
}
{
	cat <<CONF
[DEFAULT]
host = 127.0.0.1
port = $B3_PORT
is_secure = False
ssl_verify = False

[fixtures]
bucket prefix = b3compat-{random}-

CONF
	user_section "s3 main" main
	echo "lc_debug_interval = 10"
	echo
	user_section "s3 alt" alt
	echo
	user_section "s3 tenant" tenant
	echo "tenant = testx"
	echo
	user_section "iam" iam
	echo
	user_section "iam root" iamroot
	echo
	user_section "iam alt root" iamaltroot
} >"$conf"

if [ -n "$LIST" ]; then
	# pytest reads arguments from @FILE: one node id a line.
	sed -n 's|^\(test_[A-Za-z0-9_]*\)$|s3tests/functional/test_s3.py::\1|p' "$LIST" >"$COMPAT_TMP/nodeids"
	echo "running s3-tests: the $(wc -l <"$COMPAT_TMP/nodeids") tests of $LIST (timeout $TIMEOUT), log $OUT"
	set -- "@$COMPAT_TMP/nodeids"
else
	echo "running s3-tests test_s3.py -m '$MARKERS' (timeout $TIMEOUT), log $OUT"
	set -- s3tests/functional/test_s3.py -m "$MARKERS"
fi
set +e
(cd "$src" && S3TEST_CONF="$conf" timeout "$TIMEOUT" "$venv/bin/python" -m pytest \
	"$@" -p no:cacheprovider -q -rN \
	--junitxml="$XML" ${S3TESTS_ARGS:-}) >"$OUT" 2>&1
rc=$?
set -e
[ $rc = 124 ] && echo "TIMED OUT after $TIMEOUT (no summary: see $OUT)"
tail -1 "$OUT"
# Failing tests with the first line of their error, from the JUnit XML.
[ -f "$XML" ] && python3 - "$XML" "$ISSUE31_LIST" <<'PY'
import os, sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]).getroot()
issue = set()
if os.path.exists(sys.argv[2]):
    issue = {l.strip() for l in open(sys.argv[2]) if l.strip()}
n = {"pass": 0, "fail": 0, "error": 0, "skip": 0}
m = dict(n)
# A test that passes and then errors in teardown has two entries in
# pytest's JUnit XML: a test counts once, by its worst outcome.
seen = {}
for tc in t.iter("testcase"):
    name = tc.get("name")
    f = tc.find("failure")
    if f is None:
        f = tc.find("error")
    if f is not None:
        kind = "fail" if f.tag == "failure" else "error"
        msg = (f.get("message") or "").strip().splitlines()
        print("FAIL %s: %s" % (name, (msg[0] if msg else "")[:200]))
    elif tc.find("skipped") is not None:
        kind = "skip"
    else:
        kind = "pass"
    rank = {"pass": 0, "skip": 1, "fail": 2, "error": 3}
    if name not in seen or rank[kind] > rank[seen[name]]:
        seen[name] = kind
for name, kind in seen.items():
    n[kind] += 1
    if name in issue:
        m[kind] += 1
print("s3-tests test_s3.py selection: %d tests: PASS %d  FAIL %d  ERROR %d  SKIP %d" % (sum(n.values()), n["pass"], n["fail"], n["error"], n["skip"]))
if issue:
    ran = sum(m.values())
    print("of which issue 31's list (%s, %d tests): %d run: PASS %d  FAIL %d  ERROR %d  SKIP %d  (not run: %d)" % (
        os.path.basename(sys.argv[2]), len(issue), ran, m["pass"], m["fail"], m["error"], m["skip"], len(issue) - ran))
PY
