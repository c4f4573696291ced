#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fills an S3-compatible store for the s3rver tests with an independent client (boto3):
  s3_fill.py ENDPOINT BUCKET N
creates BUCKET and puts N objects train/<i:04>.bin (contents: "object <i>" and i*37 bytes of
(i + k) % 251), a folder marker train/, and other/x.bin. Prints "ok"."""
import sys

import boto3


def body(i: int) -> bytes:
    return f"object {i}".encode() + bytes((i + k) % 251 for k in range(i * 37))


def main(endpoint: str, bucket: str, n: int) -> int:
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER")
    s3.create_bucket(Bucket=bucket)
    for i in range(n):
        s3.put_object(Bucket=bucket, Key=f"train/{i:04}.bin", Body=body(i))
    s3.put_object(Bucket=bucket, Key="train/", Body=b"")
    s3.put_object(Bucket=bucket, Key="other/x.bin", Body=b"other")
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
