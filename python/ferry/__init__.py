# SPDX-License-Identifier: Apache-2.0
"""ferry: data loading for ML training, with native stages that run without the GIL.

    import ferry
    from ferry import ops, image

    pipe = (ferry.source(paths, sampling=ferry.Sampling(shuffle=True, seed=42))
            .map(ops.read_file, concurrency=8, executor="io")
            .map(image.decode_random_resized_crop(224, flip=0.5), concurrency=2)
            .batch(32)
            .map(ops.collate)
            .build(threads=2))
    for x in pipe:                      # x: ferry.Tensor, 32 x 224 x 224 x 3, uint8
        t = torch.from_dlpack(x)        # the same memory

See python/README.md in ferry's source tree for the manual.
"""
from ferry import _ferry
from ferry._ferry import (
    AsyncOp,
    Builder,
    Bytes,
    DecodeError,
    Error,
    Failure,
    Image,
    InvalidArgument,
    IOError,
    Op,
    Pipeline,
    Retry,
    Sampling,
    StageError,
    StageStats,
    Stats,
    Tensor,
    TimeoutError,
    World,
    __version__,
    retry,
    source,
    tensor,
    world,
)
from ferry._ferry import Autotune, MixInput, Tuned, merge, mix, tuned, zip  # noqa: A004
from ferry._ferry import (
    ItemInfo, RandomEngine, cuda_built, cuda_device_count, item_rng, this_call,
)
from ferry import ops, sources

if _ferry.has_image:
    from ferry import image

# The optional components' submodules, where built; ferry.<name> of one that is not says which
# CMake option builds it (importing ferry.<name> raises ImportError saying the same).
_COMPONENTS = {"video": "FERRY_VIDEO", "http": "FERRY_HTTP", "shards": "FERRY_SHARDS"}
if _ferry.has_video:
    from ferry import video
if _ferry.has_http:
    from ferry import http
if _ferry.has_shards:
    from ferry import shards


def __getattr__(name):
    if name in _COMPONENTS:
        raise AttributeError(
            f"ferry.{name} is not in this build of ferry: its C++ component ferry::{name} was "
            f"not built; configure ferry with -D{_COMPONENTS[name]}=ON and build ferry_python")
    raise AttributeError(f"module 'ferry' has no attribute '{name}'")

__all__ = [
    "AsyncOp", "Builder", "Bytes", "DecodeError", "Error", "Failure", "Image", "InvalidArgument", "IOError",
    "Op", "Pipeline", "Retry", "Sampling", "StageError", "StageStats", "Stats", "Tensor",
    "TimeoutError", "World", "__version__", "ops", "retry", "source", "sources", "tensor",
    "world",
]
__all__ += ["Autotune", "MixInput", "Tuned", "merge", "mix", "tuned", "zip"]
__all__ += ["ItemInfo", "RandomEngine", "cuda_built", "cuda_device_count", "item_rng",
            "this_call"]
if _ferry.has_image:
    __all__.append("image")
__all__ += [name for name in _COMPONENTS if getattr(_ferry, "has_" + name)]
