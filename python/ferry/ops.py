# SPDX-License-Identifier: Apache-2.0
"""Native ops of ferry's core, to pass to Builder.map: each item is processed in C++, without
the GIL.

read_file: a path (str or os.PathLike) -> ferry.Bytes, the whole file.
collate: a batch (a list of ferry.Tensor, ferry.Image or numpy arrays, all of one shape) -> one
    ferry.Tensor, the elements stacked along a new first dimension.
"""
from ferry._ferry import ops as _ops

collate = _ops.collate
read_file = _ops.read_file

__all__ = ["collate", "read_file"]
