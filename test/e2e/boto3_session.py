#!/usr/bin/env python3
"""A scripted boto3 session against a running b3 server (run by TestBoto3).

Every step asserts; the first failure raises and exits non-zero with the
step named. The last line printed on success is "boto3 session: OK".
Credentials and region come from the environment the Go test sets.
"""

import argparse
import hashlib
import os
import subprocess
import sys
import time
import urllib.parse

import boto3
import botocore
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_error(fn, code, what):
    try:
        fn()
    except ClientError as e:
        got = e.response.get("Error", {}).get("Code")
        check(got == code, "%s: error code %r, want %r" % (what, got, code))
        return
    raise AssertionError("%s: succeeded, want %s" % (what, code))


class Curl:
    def __init__(self, path, workdir):
        self.path, self.workdir, self.n = path, workdir, 0

    def get(self, url):
        """Fetches url; returns (status, body path)."""
        self.n += 1
        out = os.path.join(self.workdir, "curl-%d" % self.n)
        status = subprocess.run(
            [self.path, "-sS", "--noproxy", "*", "-o", out, "-w", "%{http_code}", url],
            check=True, capture_output=True, text=True, timeout=120).stdout
        return int(status), out

    def fetch_equals(self, url, want_sha, what):
        status, out = self.get(url)
        check(status == 200, "%s: curl status %d: %s" % (what, status, open(out, "rb").read()[:500]))
        check(sha256_file(out) == want_sha, "%s: curl body differs" % what)

    def expect_error(self, url, status, code, what):
        got, out = self.get(url)
        body = open(out, "rb").read()
        check(got == status and ("<Code>%s</Code>" % code).encode() in body,
              "%s: curl status %d body %r; want %d %s" % (what, got, body[:500], status, code))


def main():
    p = argparse.ArgumentParser()
    for name in ("endpoint", "bucket", "small", "small-sha256", "big", "big-sha256", "curl", "workdir"):
        p.add_argument("--" + name, required=True)
    a = p.parse_args()
    curl = Curl(a.curl, a.workdir)
    path_style = {"addressing_style": "path"}
    v4 = boto3.client("s3", endpoint_url=a.endpoint,
                      config=Config(signature_version="s3v4", s3=path_style, retries={"max_attempts": 1}))
    v2 = boto3.client("s3", endpoint_url=a.endpoint,
                      config=Config(signature_version="s3", s3=path_style, retries={"max_attempts": 1}))
    b = a.bucket
    step = lambda name: print("step:", name, flush=True)

    step("create bucket")
    v4.create_bucket(Bucket=b)
    check(b in [x["Name"] for x in v4.list_buckets()["Buckets"]], "list_buckets lacks the bucket")
    # SigV2 bucket-level requests: botocore signs "/bucket/" for "/bucket".
    # (Only operations every botocore signs as AWS documents go through
    # v2: botocore before ~1.31 signs sub-resources of bucket operations
    # twice, "/bucket?location?location", which AWS rejects too.)
    v2.head_bucket(Bucket=b)
    check(v4.get_bucket_location(Bucket=b).get("LocationConstraint") in (None, "", "us-east-1"),
          "get_bucket_location")

    step("upload small")
    small = open(a.small, "rb").read()
    r = v4.put_object(Bucket=b, Key="small.txt", Body=small, ContentType="text/plain",
                      Metadata={"origin": "boto3"})
    check(r["ETag"] == '"%s"' % hashlib.md5(small).hexdigest(), "put_object ETag %s" % r["ETag"])
    v2.put_object(Bucket=b, Key="small-v2.txt", Body=small)

    step("upload big (multipart)")
    cfg = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=16 << 20, max_concurrency=4)
    v4.upload_file(a.big, b, "dir/big.bin", Config=cfg)
    head = v4.head_object(Bucket=b, Key="dir/big.bin")
    check(head["ContentLength"] == os.path.getsize(a.big), "big ContentLength %d" % head["ContentLength"])
    check(head["ETag"].strip('"').endswith("-7"), "big ETag %s: not a 7-part upload" % head["ETag"])

    step("list")
    want = {"small.txt": len(small), "small-v2.txt": len(small), "dir/big.bin": os.path.getsize(a.big)}
    keys = {o["Key"]: o["Size"] for o in v4.list_objects_v2(Bucket=b)["Contents"]}
    check(keys == want, "list_objects_v2: %r" % keys)
    keys = {o["Key"]: o["Size"] for o in v2.list_objects(Bucket=b)["Contents"]}
    check(keys == want, "list_objects (SigV2): %r" % keys)
    page = v4.list_objects_v2(Bucket=b, Delimiter="/")
    check([c["Prefix"] for c in page.get("CommonPrefixes", [])] == ["dir/"], "delimiter listing: %r" % page)
    paged = [o["Key"] for pg in v4.get_paginator("list_objects").paginate(Bucket=b, PaginationConfig={"PageSize": 1})
             for o in pg.get("Contents", [])]
    check(paged == ["dir/big.bin", "small-v2.txt", "small.txt"], "paged list_objects v1: %r" % paged)

    step("download")
    out = os.path.join(a.workdir, "big")
    v4.download_file(b, "dir/big.bin", out, Config=cfg)
    check(sha256_file(out) == a.big_sha256, "download_file big: SHA-256 differs")
    got = v4.get_object(Bucket=b, Key="small.txt")
    check(got["Body"].read() == small, "get_object small")
    check(got["Metadata"] == {"origin": "boto3"} and got["ContentType"] == "text/plain",
          "metadata %r type %r" % (got["Metadata"], got["ContentType"]))
    got = v2.get_object(Bucket=b, Key="dir/big.bin", Range="bytes=1000-1999")
    with open(a.big, "rb") as f:
        f.seek(1000)
        check(got["Body"].read() == f.read(1000), "ranged get_object (SigV2)")

    step("presign")
    url = v4.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "small.txt"}, ExpiresIn=300)
    check("X-Amz-Signature=" in url, "SigV4 presign: %s" % url)
    curl.fetch_equals(url, a.small_sha256, "SigV4 presigned GET")
    url = v2.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "dir/big.bin"}, ExpiresIn=300)
    check("Signature=" in url and "AWSAccessKeyId=" in url, "SigV2 presign: %s" % url)
    curl.fetch_equals(url, a.big_sha256, "SigV2 presigned GET")
    # A presigned URL whose expiry has passed: botocore computes
    # Expires = now + ExpiresIn.
    url = v2.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "small.txt"}, ExpiresIn=-60)
    curl.expect_error(url, 403, "AccessDenied", "expired SigV2 presigned GET")
    # A tampered signature.
    parts = urllib.parse.urlsplit(v4.generate_presigned_url(
        "get_object", Params={"Bucket": b, "Key": "small.txt"}, ExpiresIn=300))
    query = urllib.parse.parse_qsl(parts.query)
    query = [(k, ("0" * len(v) if k == "X-Amz-Signature" else v)) for k, v in query]
    url = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
    curl.expect_error(url, 403, "SignatureDoesNotMatch", "tampered SigV4 presigned GET")
    # A presigned PUT, sent by curl.
    url = v4.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "presigned-put.txt"}, ExpiresIn=300)
    status = subprocess.run([a.curl, "-sS", "--noproxy", "*", "-o", os.devnull, "-w", "%{http_code}",
                             "-X", "PUT", "--data-binary", "@" + a.small, url],
                            check=True, capture_output=True, text=True, timeout=60).stdout
    check(status == "200", "presigned PUT via curl: status %s" % status)
    check(v4.get_object(Bucket=b, Key="presigned-put.txt")["Body"].read() == small, "presigned PUT body")

    step("copy")
    v4.copy_object(Bucket=b, Key="copy.txt", CopySource={"Bucket": b, "Key": "small.txt"})
    got = v4.get_object(Bucket=b, Key="copy.txt")
    check(got["Body"].read() == small and got["Metadata"] == {"origin": "boto3"}, "copy_object")
    v4.copy({"Bucket": b, "Key": "dir/big.bin"}, b, "dir/big-copy.bin", Config=cfg)  # UploadPartCopy
    out = os.path.join(a.workdir, "big-copy")
    v4.download_file(b, "dir/big-copy.bin", out)
    check(sha256_file(out) == a.big_sha256, "managed copy of big: SHA-256 differs")

    step("delete")
    v4.delete_object(Bucket=b, Key="small.txt")
    expect_error(lambda: v4.head_object(Bucket=b, Key="small.txt"), "404", "head_object after delete")
    expect_error(lambda: v4.get_object(Bucket=b, Key="small.txt"), "NoSuchKey", "get_object after delete")
    expect_error(lambda: v4.delete_bucket(Bucket=b), "BucketNotEmpty", "delete_bucket of a non-empty bucket")
    keys = [o["Key"] for o in v4.list_objects_v2(Bucket=b)["Contents"]]
    r = v4.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in keys]})
    check(sorted(d["Key"] for d in r.get("Deleted", [])) == sorted(keys) and not r.get("Errors"),
          "delete_objects: %r" % r)
    check(v4.list_objects_v2(Bucket=b)["KeyCount"] == 0, "bucket not empty after delete_objects")

    step("delete bucket")
    v4.delete_bucket(Bucket=b)
    expect_error(lambda: v4.head_bucket(Bucket=b), "404", "head_bucket after delete_bucket")
    print("boto3 %s, botocore %s" % (boto3.__version__, botocore.__version__))
    print("boto3 session: OK")


if __name__ == "__main__":
    start = time.monotonic()
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report every failure the same way
        print("FAIL: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
    print("took %.1fs" % (time.monotonic() - start))
