#!/usr/bin/python3
"""Access control through boto3, as a Python application sets it up.

Run by TestBoto3Access against a running `b3 server`: an owner (root) and a
second user (viewer). Checks ACL documents as boto3 serializes them
(AccessControlPolicy with xsi:type grantees, grant headers), bucket
policies with conditions, Block Public Access and ownership controls, and
unsigned (anonymous) access with botocore.UNSIGNED. Prints
"boto3 access: OK" when every check passed; any failure raises.
"""
import argparse
import json

import boto3
import botocore
from botocore.config import Config


def client(endpoint, key=None, secret=None):
    cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
    if key is None:
        cfg = cfg.merge(Config(signature_version=botocore.UNSIGNED))
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=key or "x", aws_secret_access_key=secret or "x", config=cfg)


def code_of(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return ""


def expect(what, got, want):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--root", nargs=2, required=True)
    ap.add_argument("--viewer", nargs=3, required=True, help="access key, secret, canonical id")
    a = ap.parse_args()
    root = client(a.endpoint, *a.root)
    viewer = client(a.endpoint, a.viewer[0], a.viewer[1])
    anon = client(a.endpoint)
    viewer_id = a.viewer[2]
    b = "boto3-access"

    root.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    expect("new bucket blocks public access",
           root.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"],
           {"BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True})
    expect("public ACL while blocked",
           code_of(lambda: root.put_object(Bucket=b, Key="x", Body=b"x", ACL="public-read")), "AccessDenied")
    root.delete_public_access_block(Bucket=b)

    # An AccessControlPolicy document as boto3 serializes it.
    root.put_object(Bucket=b, Key="doc", Body=b"for the viewer")
    owner = root.get_object_acl(Bucket=b, Key="doc")["Owner"]
    root.put_object_acl(Bucket=b, Key="doc", AccessControlPolicy={
        "Owner": owner,
        "Grants": [
            {"Grantee": {"Type": "CanonicalUser", "ID": owner["ID"]}, "Permission": "FULL_CONTROL"},
            {"Grantee": {"Type": "CanonicalUser", "ID": viewer_id}, "Permission": "READ"},
            {"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": "viewer@example.com"}, "Permission": "READ_ACP"},
        ]})
    acl = root.get_object_acl(Bucket=b, Key="doc")
    got = sorted((g["Grantee"].get("ID", g["Grantee"].get("URI")), g["Permission"]) for g in acl["Grants"])
    expect("object ACL", got, sorted([(owner["ID"], "FULL_CONTROL"), (viewer_id, "READ"), (viewer_id, "READ_ACP")]))
    expect("viewer reads", viewer.get_object(Bucket=b, Key="doc")["Body"].read(), b"for the viewer")
    expect("viewer reads the ACL", len(viewer.get_object_acl(Bucket=b, Key="doc")["Grants"]), 3)
    expect("anonymous read", code_of(lambda: anon.get_object(Bucket=b, Key="doc")), "AccessDenied")

    # Grant headers.
    root.put_object(Bucket=b, Key="public", Body=b"everyone", GrantRead='uri="http://acs.amazonaws.com/groups/global/AllUsers"')
    expect("anonymous read of a public object", anon.get_object(Bucket=b, Key="public")["Body"].read(), b"everyone")

    # A policy: the viewer lists one prefix, anyone reads playlists.
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "viewer"}, "Action": "s3:ListBucket",
         "Resource": f"arn:aws:s3:::{b}", "Condition": {"StringEquals": {"s3:prefix": "live/"}}},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{b}/live/*.m3u8"},
    ]}
    root.put_bucket_policy(Bucket=b, Policy=json.dumps(policy))
    expect("policy status", root.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"], True)
    expect("policy round trip", json.loads(root.get_bucket_policy(Bucket=b)["Policy"]), policy)
    root.put_object(Bucket=b, Key="live/index.m3u8", Body=b"#EXTM3U\n")
    expect("anonymous playlist", anon.get_object(Bucket=b, Key="live/index.m3u8")["Body"].read(), b"#EXTM3U\n")
    expect("viewer lists live/", [o["Key"] for o in viewer.list_objects_v2(Bucket=b, Prefix="live/")["Contents"]], ["live/index.m3u8"])
    expect("viewer lists all", code_of(lambda: viewer.list_objects_v2(Bucket=b)), "AccessDenied")
    expect("malformed policy", code_of(lambda: root.put_bucket_policy(Bucket=b, Policy="{nope")), "MalformedPolicy")

    # Ownership controls.
    expect("ownership", root.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"],
           [{"ObjectOwnership": "ObjectWriter"}])
    attrs = root.get_object_attributes(Bucket=b, Key="doc", ObjectAttributes=["ETag", "ObjectSize"])
    expect("object attributes", (attrs["ObjectSize"], len(attrs["ETag"])), (14, 32))
    print("boto3 access: OK")


if __name__ == "__main__":
    main()
