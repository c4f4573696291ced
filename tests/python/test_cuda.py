# SPDX-License-Identifier: Apache-2.0
"""Builder.to_cuda(): without a CUDA build or a device, build() raises naming why; with one
(cases marked gpu, skipped with their reason elsewhere), batches arrive in device memory as
ferry.Tensor whose DLPack export torch reads as a cuda tensor with the host batch's values."""
import numpy as np
import pytest
import torch

import ferry

HAS_GPU = ferry.cuda_device_count() > 0 and torch.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA device and ferry built with CUDA "
                                             f"(cuda_built={ferry.cuda_built()}, "
                                             f"devices={ferry.cuda_device_count()})")


def batches(n=6, size=4):
    """ferry.Tensor batches of u8 images (4 x 8 x 6 x 3) with int labels: [images, labels]."""
    def make(i):
        return [ferry.tensor(np.full((8, 6, 3), i, np.uint8)), i]
    return (ferry.source(range(n * size)).map(make).batch(size).map(ferry.ops.collate))


# Without a device (or without CUDA in the build) the stage is described freely, and build()
# raises ferry.Error with code 'cuda' saying which of the two it is.
@pytest.mark.skipif(HAS_GPU, reason="this machine has a CUDA device")
def test_to_cuda_without_a_device_fails_at_build_naming_why():
    b = batches().to_cuda()
    with pytest.raises(ferry.Error) as e:
        b.build(threads=1)
    assert e.value.code == "cuda"
    if not ferry.cuda_built():
        assert str(e.value).startswith("ferry was built without CUDA (FERRY_CUDA=OFF, or no CUDA "
                                       "Toolkit found when it was configured)")
    else:
        assert str(e.value).startswith("no CUDA device: ")
    assert not isinstance(e.value, ferry.InvalidArgument)


# Options that cannot work are ValueErrors where to_cuda() is called.
def test_to_cuda_options_are_checked():
    b = batches()
    with pytest.raises(ValueError, match=r"to_cuda\(device=-1\): a CUDA device ordinal"):
        b.to_cuda(-1)
    with pytest.raises(ValueError, match=r"mean and std need one value per channel, got 3 and 2"):
        b.to_cuda(normalize=True, std=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"to_cuda\(std=...\): 0.000000 is not a finite number "
                                         r"other than 0"):
        b.to_cuda(normalize=True, std=[0.5, 0.0, 0.5])


# On a GPU: each batch's images arrive as a ferry.Tensor in device memory,
# __dlpack_device__ (kDLCUDA = 2, 0); torch.from_dlpack gives a cuda tensor with the host
# batch's values; the labels (an int64 tensor) arrive on the device too.
@gpu
def test_to_cuda_delivers_device_tensors_torch_reads():
    with batches().to_cuda(0).build(threads=2) as pipe:
        got = list(pipe)
    assert len(got) == 6
    for k, (images, labels) in enumerate(got):
        assert images.device == "cuda" and images.__dlpack_device__() == (2, 0)
        t = torch.from_dlpack(images)
        assert t.is_cuda and t.shape == (4, 8, 6, 3) and t.dtype == torch.uint8
        expected = torch.arange(4 * k, 4 * k + 4, dtype=torch.uint8).view(4, 1, 1, 1)
        assert torch.equal(t.cpu(), expected.expand(4, 8, 6, 3))
        assert labels.device == "cuda"
        assert torch.from_dlpack(labels).cpu().tolist() == list(range(4 * k, 4 * k + 4))


# On a GPU: normalize=True makes f32 C x H x W on the device, (x / 255 - mean) / std.
@gpu
def test_to_cuda_normalizes_on_the_device():
    with batches(n=1).to_cuda(normalize=True, mean=[0.5] * 3, std=[0.25] * 3).build() as pipe:
        images, _ = next(iter(pipe))
    t = torch.from_dlpack(images).cpu()
    assert t.shape == (4, 3, 8, 6) and t.dtype == torch.float32
    expected = (torch.arange(4, dtype=torch.float32) / 255 - 0.5) / 0.25
    assert torch.allclose(t, expected.view(4, 1, 1, 1).expand(4, 3, 8, 6), atol=1e-6)


# On a GPU: an element holding a Python object (not a ferry.Tensor) fails, saying what to do.
@gpu
def test_to_cuda_refuses_python_objects():
    b = ferry.source(range(2)).map(lambda x: np.zeros(3)).to_cuda()
    with b.build(threads=1) as pipe:
        with pytest.raises(ferry.StageError, match=r"return ferry.tensor\(x\)"):
            list(pipe)
