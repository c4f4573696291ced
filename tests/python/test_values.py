# SPDX-License-Identifier: Apache-2.0
"""Values that reach Python: ferry.Tensor, ferry.Image and ferry.Bytes share ferry's memory with
torch (DLPack) and numpy (the buffer protocol), and keep it alive."""
import gc

import numpy as np
import pytest
import torch

import ferry
from ferry import image, ops


def batches(paths, n):
    return (ferry.source(paths)
            .map(ops.read_file, executor="io")
            .map(image.decode_image(resize=(8, 12)))
            .batch(n)
            .map(ops.collate)
            .build(threads=2))


# torch.from_dlpack(x) is x's memory (the same data pointer), and the torch tensor outlives the
# pipeline and the ferry.Tensor: its values are still the batch's after both are gone.
def test_dlpack_shares_memory_and_outlives_the_pipeline(image_files):
    pipe = batches(image_files["png"][:4], 4)
    x = next(iter(pipe))
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr
    assert t.dtype == torch.uint8 and tuple(t.shape) == x.shape == (4, 8, 12, 3)
    copy = np.array(x)  # a copy, to compare with later
    pipe.close()
    del pipe, x
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), copy)
    t[0, 0, 0, 0] = 255 - t[0, 0, 0, 0]  # still writable memory of its own
    assert t.sum().item() != int(copy.sum())


# numpy.asarray(x) is a view of x's memory (no copy): the same address, writes seen through
# torch's view of it, and the array keeps the memory alive after x is dropped.
def test_numpy_asarray_is_zero_copy(image_files):
    with batches(image_files["png"][:2], 2) as pipe:
        x = next(iter(pipe))
    a = np.asarray(x)
    assert a.ctypes.data == x.data_ptr and a.shape == (2, 8, 12, 3) and a.dtype == np.uint8
    t = torch.from_dlpack(x)
    a[1, 2, 3, 1] = 7
    assert t[1, 2, 3, 1].item() == 7
    del x, t
    gc.collect()
    assert a[1, 2, 3, 1] == 7


# A ferry.Image exports its pixels both ways too (H x W x C, uint8), and its DLPack export
# keeps the pixels alive after the Image is gone.
def test_image_exports_its_pixels(image_files):
    img = image.decode_image()(ops.read_file(image_files["png"][0]))
    assert isinstance(img, ferry.Image)
    assert (img.height, img.width, img.channels, img.format) == (48, 64, 3, "rgb")
    a = np.asarray(img)
    assert a.shape == (48, 64, 3) and a.ctypes.data == img.data_ptr
    np.testing.assert_array_equal(a, image_files["pixels"][0])
    t = torch.from_dlpack(img)
    assert t.data_ptr() == img.data_ptr
    del img, a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), image_files["pixels"][0])


# ferry.Bytes is a read-only buffer of the file's bytes (memoryview, numpy) without a copy.
def test_bytes_are_a_read_only_buffer(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"\x00\x01ferry\xff")
    b = ops.read_file(str(path))
    assert isinstance(b, ferry.Bytes) and len(b) == 8 and bytes(b) == b"\x00\x01ferry\xff"
    m = memoryview(b)
    assert m.readonly and m.tobytes() == b"\x00\x01ferry\xff"
    with pytest.raises(TypeError):
        m[0] = 1
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert memoryview(ops.read_file(empty)).tobytes() == b""


# A ferry.Tensor a Python stage returns goes back to the native stages as it is (collate reads
# its memory), and ferry.tensor(array) hands numpy data to them; collate also stacks numpy
# arrays.
def test_tensors_from_python_stages_feed_native_ones():
    def to_ferry(i):
        return ferry.tensor(np.full((2, 3), i, np.float32))

    out, = list(ferry.source(range(4)).map(to_ferry).batch(4).map(ops.collate)
                .build(threads=1))
    assert out.dtype == "f32" and out.shape == (4, 2, 3)
    np.testing.assert_array_equal(np.asarray(out)[:, 0, 0], [0, 1, 2, 3])
    arrays, = list(ferry.source(range(3)).map(lambda i: np.arange(4, dtype=np.int64) * i)
                   .batch(3).map(ops.collate).build(threads=1))
    assert arrays.dtype == "i64"
    np.testing.assert_array_equal(np.asarray(arrays), np.outer(np.arange(3), np.arange(4)))
