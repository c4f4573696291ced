#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks an AWS SigV4 signature the way S3 does, independently of the signer (libcurl):
reads one request as JSON (method, target, headers as [name, value] pairs, secret key) and
prints "ok" when its Authorization header is the one the secret gives, else what differs.
Written from AWS's "Signature Version 4 signing process" (canonical request, string to sign,
derived key); standard library only."""
import hashlib
import hmac
import json
import sys


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sign(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def main(path: str) -> int:
    with open(path) as f:
        req = json.load(f)
    headers = {}
    for name, value in req["headers"]:
        headers.setdefault(name.lower(), []).append(" ".join(value.split()))
    auth = headers["authorization"][0]
    algorithm, rest = auth.split(" ", 1)
    fields = dict(part.strip().split("=", 1) for part in rest.split(","))
    credential = fields["Credential"].split("/")
    access_key, date, region, service, terminal = credential
    signed = fields["SignedHeaders"].split(";")
    target = req["target"]
    uri, _, query = target.partition("?")
    pairs = []
    for item in query.split("&") if query else []:
        k, _, v = item.partition("=")
        pairs.append((k, v))
    canonical_query = "&".join(f"{k}={v}" for k, v in sorted(pairs))
    canonical_headers = "".join(f"{h}:{','.join(headers[h])}\n" for h in signed)
    payload = headers.get("x-amz-content-sha256", [sha256_hex(b"")])[0]
    canonical = "\n".join([req["method"], uri, canonical_query, canonical_headers,
                           ";".join(signed), payload])
    amz_date = headers["x-amz-date"][0]
    scope = f"{date}/{region}/{service}/{terminal}"
    to_sign = "\n".join([algorithm, amz_date, scope, sha256_hex(canonical.encode())])
    key = sign(("AWS4" + req["secret"]).encode(), date)
    key = sign(key, region)
    key = sign(key, service)
    key = sign(key, terminal)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    problems = []
    if algorithm != "AWS4-HMAC-SHA256":
        problems.append(f"algorithm {algorithm}")
    if access_key != req["access_key"]:
        problems.append(f"access key {access_key}")
    if region != req["region"] or service != "s3" or terminal != "aws4_request":
        problems.append(f"scope {scope}")
    if not amz_date.startswith(date):
        problems.append(f"x-amz-date {amz_date} outside {date}")
    for h in ("host", "x-amz-date", "x-amz-content-sha256"):
        if h not in signed:
            problems.append(f"{h} not signed")
    if fields["Signature"] != expected:
        problems.append(f"signature {fields['Signature']} != {expected}; canonical request:\n{canonical}")
    print("ok" if not problems else "; ".join(problems))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
