#!/usr/bin/env python3
"""Versioning and Object Lock through boto3 (run by TestBoto3Versioning).

A random history of puts, deletes (with and without version ids) and
versioning state changes, including suspended buckets and delete markers,
is checked after every step against a model of AWS's rules; thousands of
versions are paged with boto3's paginator; Object Lock refusals; and the
bucket is emptied the way Terraform's force_destroy does it (list every
version, delete them in batches), then deleted. The last line printed on
success is "boto3 versioning: OK".
"""

import argparse
import datetime
import random

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def error_code(fn):
    try:
        fn()
    except ClientError as e:
        return e.response.get("Error", {}).get("Code") or str(e.response["ResponseMetadata"]["HTTPStatusCode"])
    return None


class Model:
    """A bucket's versions by AWS's rules: key -> [(id, marker, body)], newest first."""

    def __init__(self):
        self.state, self.keys = "", {}

    def drop_null(self, key):
        self.keys[key] = [v for v in self.keys.get(key, []) if v[0] != "null"]

    def put(self, key, vid, body):
        if self.state != "Enabled":
            self.drop_null(key)
        self.keys[key] = [(vid, False, body)] + self.keys.get(key, [])

    def delete(self, key, vid):
        if self.state != "Enabled":
            self.drop_null(key)
        if self.state != "":
            self.keys[key] = [(vid, True, None)] + self.keys.get(key, [])

    def delete_version(self, key, vid):
        for i, v in enumerate(self.keys.get(key, [])):
            if v[0] == vid:
                del self.keys[key][i]
                return v[1]
        return False

    def listing(self):
        out = []
        for k in sorted(self.keys):
            for i, v in enumerate(self.keys[k]):
                out.append((k, v[0], v[1], i == 0))
        return sorted(out)


def all_versions(s3, bucket, page):
    out = []
    for res in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, PaginationConfig={"PageSize": page}):
        n = len(res.get("Versions", [])) + len(res.get("DeleteMarkers", []))
        check(n <= page, "page of %d entries for max-keys %d" % (n, page))
        for v in res.get("Versions", []):
            out.append((v["Key"], v["VersionId"], False, v["IsLatest"]))
        for d in res.get("DeleteMarkers", []):
            out.append((d["Key"], d["VersionId"], True, d["IsLatest"]))
    return sorted(out)


def check_key(s3, bucket, key, m, after):
    vs = m.keys.get(key, [])
    try:
        r = s3.get_object(Bucket=bucket, Key=key)
        body = r["Body"].read().decode()
        check(vs and not vs[0][1], "after %s: GET %s found %r, model says none" % (after, key, body))
        vid = r.get("VersionId", "null" if m.state == "" else None)
        check(body == vs[0][2] and vid == vs[0][0],
              "after %s: GET %s = %r version %r, want %r version %r" % (after, key, body, vid, vs[0][2], vs[0][0]))
    except ClientError as e:
        check(e.response["Error"]["Code"] == "NoSuchKey", "after %s: GET %s: %s" % (after, key, e))
        check(not vs or vs[0][1], "after %s: GET %s: NoSuchKey, model has %r" % (after, key, vs[:1]))
        if vs:
            h = e.response["ResponseMetadata"]["HTTPHeaders"]
            check(h.get("x-amz-delete-marker") == "true" and h.get("x-amz-version-id") == vs[0][0],
                  "after %s: GET %s of a delete marker: headers %r" % (after, key, h))
    for vid, marker, body in vs:
        if marker:
            check(error_code(lambda: s3.get_object(Bucket=bucket, Key=key, VersionId=vid)) == "MethodNotAllowed",
                  "after %s: GET of marker %s" % (after, vid))
        else:
            got = s3.get_object(Bucket=bucket, Key=key, VersionId=vid)["Body"].read().decode()
            check(got == body, "after %s: GET %s version %s = %r, want %r" % (after, key, vid, got, body))


def model_history(s3, bucket, seed):
    rng = random.Random(seed)
    s3.create_bucket(Bucket=bucket)
    m = Model()
    keys = ["a", "a/b", "b", "dir/c"]
    for step in range(150):
        key = rng.choice(keys)
        op = rng.randrange(20)
        if op < 8:
            body = "%s-%d-%d" % (key, seed, step)
            vid = s3.put_object(Bucket=bucket, Key=key, Body=body.encode()).get("VersionId")
            if m.state != "Enabled":
                # The null version: AWS's answer names none.
                check(vid is None, "PUT in %r bucket reported %r" % (m.state, vid))
                vid = "null"
            check((vid == "null") == (m.state != "Enabled"), "PUT in %r bucket: version %r" % (m.state, vid))
            m.put(key, vid, body)
            what = "put " + key
        elif op < 12:
            r = s3.delete_object(Bucket=bucket, Key=key)
            vid = r.get("VersionId")
            if m.state != "":
                check(r.get("DeleteMarker") is True and (vid == "null") == (m.state == "Suspended"),
                      "DELETE in %r bucket: %r" % (m.state, r))
            m.delete(key, vid)
            what = "delete " + key
        elif op < 16 and m.keys.get(key):
            vid, marker, _ = rng.choice(m.keys[key])
            r = s3.delete_object(Bucket=bucket, Key=key, VersionId=vid)
            was = m.delete_version(key, vid)
            check(bool(r.get("DeleteMarker", False)) == was and r.get("VersionId") == vid,
                  "DELETE version %s: %r, want marker %r" % (vid, r, was))
            what = "delete version %s of %s" % (vid, key)
        elif op < 18:
            m.state = rng.choice(["Enabled", "Suspended"])
            s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": m.state})
            check(s3.get_bucket_versioning(Bucket=bucket).get("Status") == m.state, "versioning status")
            what = "versioning " + m.state
        else:
            continue
        check_key(s3, bucket, key, m, what)
        if step % 40 == 39:
            got, want = all_versions(s3, bucket, rng.randint(1, 5)), m.listing()
            check(got == want, "step %d: versions\n got %r\nwant %r" % (step, got, want))
    return m


def force_destroy(s3, bucket):
    """Empty a bucket as Terraform's force_destroy does, then delete it."""
    batch = []
    for res in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for v in res.get("Versions", []) + res.get("DeleteMarkers", []):
            batch.append({"Key": v["Key"], "VersionId": v["VersionId"]})
    for i in range(0, len(batch), 1000):
        r = s3.delete_objects(Bucket=bucket, Delete={"Objects": batch[i:i + 1000], "Quiet": True})
        check(not r.get("Errors"), "delete_objects errors: %r" % r.get("Errors"))
    s3.delete_bucket(Bucket=bucket)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", required=True)
    p.add_argument("--bucket", required=True)
    a = p.parse_args()
    s3 = boto3.client("s3", endpoint_url=a.endpoint,
                      config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    step = lambda name: print("step:", name, flush=True)

    for seed in range(2):
        step("random history %d" % seed)
        b = "%s-model%d" % (a.bucket, seed)
        model_history(s3, b, seed)
        force_destroy(s3, b)

    step("thousands of versions")
    b = a.bucket + "-many"
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    ids = {}
    for i in range(1500):
        key = "seg/%d.ts" % (i % 3)
        ids.setdefault(key, []).append(s3.put_object(Bucket=b, Key=key, Body=b"%d" % i)["VersionId"])
    for page in (1000, 77):
        got = {}
        for res in s3.get_paginator("list_object_versions").paginate(Bucket=b, PaginationConfig={"PageSize": page}):
            for v in res.get("Versions", []):
                got.setdefault(v["Key"], []).append(v["VersionId"])
        for key, want in ids.items():
            check(got.get(key) == list(reversed(want)), "page %d: %s: %d versions, want %d newest first" %
                  (page, key, len(got.get(key, [])), len(want)))
    force_destroy(s3, b)

    step("object lock")
    b = a.bucket + "-lock"
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    vid = s3.put_object(Bucket=b, Key="evidence.mp4", Body=b"frames", ObjectLockMode="COMPLIANCE",
                        ObjectLockRetainUntilDate=until)["VersionId"]
    check(error_code(lambda: s3.delete_object(Bucket=b, Key="evidence.mp4", VersionId=vid,
                                              BypassGovernanceRetention=True)) == "AccessDenied",
          "delete of a COMPLIANCE version")
    check(error_code(lambda: s3.put_object_retention(
        Bucket=b, Key="evidence.mp4", VersionId=vid,
        Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})) == "AccessDenied",
        "weakening a COMPLIANCE retention")
    gvid = s3.put_object(Bucket=b, Key="draft.mp4", Body=b"x", ObjectLockMode="GOVERNANCE",
                         ObjectLockRetainUntilDate=until)["VersionId"]
    check(error_code(lambda: s3.delete_object(Bucket=b, Key="draft.mp4", VersionId=gvid)) == "AccessDenied",
          "delete of a GOVERNANCE version without bypass")
    s3.delete_object(Bucket=b, Key="draft.mp4", VersionId=gvid, BypassGovernanceRetention=True)
    hvid = s3.put_object(Bucket=b, Key="held.mp4", Body=b"x")["VersionId"]
    s3.put_object_legal_hold(Bucket=b, Key="held.mp4", VersionId=hvid, LegalHold={"Status": "ON"})
    check(s3.get_object_legal_hold(Bucket=b, Key="held.mp4", VersionId=hvid)["LegalHold"]["Status"] == "ON", "legal hold")
    check(error_code(lambda: s3.delete_object(Bucket=b, Key="held.mp4", VersionId=hvid)) == "AccessDenied",
          "delete under legal hold")
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "evidence.mp4", "VersionId": vid}]})
    check([e["Code"] for e in r.get("Errors", [])] == ["AccessDenied"], "batch delete of a locked version: %r" % r)
    check(s3.get_object(Bucket=b, Key="evidence.mp4", VersionId=vid)["Body"].read() == b"frames", "locked version kept")
    ret = s3.get_object_retention(Bucket=b, Key="evidence.mp4", VersionId=vid)["Retention"]
    check(ret["Mode"] == "COMPLIANCE", "retention %r" % ret)
    check(error_code(lambda: s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"}))
          == "InvalidBucketState", "suspending a locked bucket")

    print("boto3 versioning: OK", flush=True)


if __name__ == "__main__":
    main()
