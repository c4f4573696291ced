# SPDX-License-Identifier: Apache-2.0
"""Datasets listed natively, to pass to ferry.source: their items are native values, so a chain
of native ops over them takes no GIL per item.

image_folder(path, extensions=None, recursive=True): path/<class>/<file> (torchvision's
    ImageFolder layout) -> LabelledFiles, a sequence of (path, label) with .classes. Its source's
    items are the lists [path, label]: ops.read_file and the image ops map the path (then the
    bytes, the image) and keep the label; ops.collate makes [data, labels] of a batch of them.
files(path, extensions=None, recursive=False): the regular files under path, sorted, a list of
    str.
lines(path): the lines of a text file (a list of URLs or paths), blank ones skipped, a list of
    str.
tar_samples(shards, ...): tar shards' samples (ferry.shards.tar_samples), where ferry::shards is
    built.
list_objects(url, ...): an S3 prefix's objects as s3:// URLs (ferry.http.list_objects), where
    ferry::http is built.
"""
from ferry import _ferry
from ferry._ferry import sources as _sources

LabelledFiles = _sources.LabelledFiles
files = _sources.files
image_folder = _sources.image_folder
lines = _sources.lines

__all__ = ["LabelledFiles", "files", "image_folder", "lines"]

if _ferry.has_shards:
    from ferry._ferry.shards import TarSamples, tar_samples  # noqa: F401
    __all__ += ["TarSamples", "tar_samples"]
if _ferry.has_http:
    from ferry._ferry.http import list_objects  # noqa: F401
    __all__.append("list_objects")
