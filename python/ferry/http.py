# SPDX-License-Identifier: Apache-2.0
"""Reading URLs (ferry::http, libcurl): a native op for Builder.map, and S3 listings.

read_url: a URL (http://, https://, file://, s3://bucket/key) -> ferry.Bytes, fetched in C++
    without the GIL; read_url(timeout=..., headers=..., ...) is the op with those http options.
list_objects(url, ...): the objects under an S3 prefix, a list of s3:// URLs for ferry.source.
open_cache(dir, ...): a local disk cache (a Cache) that read_url(cache=...) reads through, so
    that the second epoch of a remote dataset reads local files.
Client(max_outstanding=256, retry=None): many requests outstanding on one event loop;
    client.reader(**options) is the asynchronous op for map (ferry.AsyncOp).
hosts(): each host's adaptive limit, requests and throttled answers (a list of Host).
ReadUrl: the type of read_url and of the ops it makes; Cache, CacheStats: open_cache's.
"""
from ferry import _ferry

if not _ferry.has_http:
    raise ImportError(
        "ferry.http is not in this build of ferry: its C++ component ferry::http was not built; "
        "configure ferry with -DFERRY_HTTP=ON (it needs libcurl, expat and OpenSSL: "
        "libcurl4-openssl-dev, libexpat1-dev, libssl-dev) and build the target ferry_python")

Cache = _ferry.http.Cache
CacheStats = _ferry.http.CacheStats
Client = _ferry.http.Client
Host = _ferry.http.Host
ReadUrl = _ferry.http.ReadUrl
hosts = _ferry.http.hosts
list_objects = _ferry.http.list_objects
open_cache = _ferry.http.open_cache
read_url = _ferry.http.read_url

__all__ = ["Cache", "CacheStats", "Client", "Host", "ReadUrl", "hosts", "list_objects",
           "open_cache", "read_url"]
