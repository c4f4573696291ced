# SPDX-License-Identifier: Apache-2.0
"""Tar shards in WebDataset's layout (ferry::shards, libarchive): a native source of samples and
native ops on them, for ferry.source and Builder.map.

tar_samples(shards, *, sampling=None, shuffle_buffer=0, ...) -> TarSamples, for ferry.source: its
    items are samples, tuples of (name, value) pairs; dict(sample) is WebDataset's sample dict
    ({"jpg": ferry.Bytes, ..., "__key__": key, "__url__": shard}).
field(ext): a sample -> its member ext (ferry.Bytes).
fields(*exts): a sample -> [its members exts...].
labelled(ext, label='cls'): a sample -> [member ext, int(member label)], a labelled item.
"""
from ferry import _ferry

if not _ferry.has_shards:
    raise ImportError(
        "ferry.shards is not in this build of ferry: its C++ component ferry::shards was not "
        "built; configure ferry with -DFERRY_SHARDS=ON (it needs libarchive: libarchive-dev) and "
        "build the target ferry_python")

TarSamples = _ferry.shards.TarSamples
field = _ferry.shards.field
fields = _ferry.shards.fields
labelled = _ferry.shards.labelled
tar_samples = _ferry.shards.tar_samples

__all__ = ["TarSamples", "field", "fields", "labelled", "tar_samples"]
