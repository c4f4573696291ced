# SPDX-License-Identifier: Apache-2.0
"""Native chains from Python: the pixels ferry's ops give equal Pillow's, and a chain of native
ops takes the GIL for no item."""
import numpy as np
import pytest
from PIL import Image

import ferry
from ferry import image, ops


def pillow(path):
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


# read_file -> decode_image -> batch -> collate over PNG files gives Pillow's pixels exactly
# (PNG is lossless), in source order, stacked N x H x W x C.
def test_png_chain_equals_pillow(image_files):
    paths = [p for p, px in zip(image_files["png"], image_files["pixels"]) if px.shape[1] == 64]
    pipe = (ferry.source(paths)
            .map(ops.read_file, concurrency=4, executor="io")
            .map(image.decode_image(), concurrency=2)
            .batch(4)
            .map(ops.collate)
            .build(threads=2))
    batches = list(pipe)
    assert [b.shape for b in batches] == [(4, 48, 64, 3)] * 3
    got = np.concatenate([np.asarray(b) for b in batches])
    want = np.stack([pillow(p) for p in paths])
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


# JPEG decoding gives Pillow's pixels exactly: both decode baseline JPEGs with libjpeg-turbo's
# accurate IDCT and fancy upsampling (tests/image compares ferry's decoder to libjpeg exactly).
def test_jpeg_decode_equals_pillow(image_files):
    pipe = (ferry.source(image_files["jpeg"])
            .map(ops.read_file, executor="io")
            .map(image.decode_image(), concurrency=2)
            .build(threads=2))
    got = [np.asarray(img) for img in pipe]
    assert len(got) == len(image_files["jpeg"])
    for path, g in zip(image_files["jpeg"], got):
        np.testing.assert_array_equal(g, pillow(path), err_msg=path)


# decode_image(resize=..., interp='antialias') is Pillow's resize(BILINEAR), pixel for pixel
# (tests/image/antialias.cpp holds the C++ op to the same bound: 0). Sizes are (height, width).
def test_decode_resize_antialias_equals_pillow(image_files):
    path = image_files["png"][1]  # 96 x 72
    got = np.asarray(image.decode_image(resize=(40, 50), interp="antialias")(
        ops.read_file(path)))
    with Image.open(path) as im:
        want = np.asarray(im.convert("RGB").resize((50, 40), Image.BILINEAR))
    assert got.shape == (40, 50, 3)
    np.testing.assert_array_equal(got, want)


# decode_random_resized_crop with a crop that is the whole image (scale 1, the image's own
# ratio) is a plain resize: Pillow's pixels with 'antialias'; and flip=1.0 is flip=0.0 mirrored
# (the same box is drawn first, then the flip).
def test_decode_random_resized_crop_whole_image_and_flip(image_files):
    path = image_files["png"][0]  # 64 x 48
    whole = dict(scale=(1.0, 1.0), ratio=(64 / 48, 64 / 48), interp="antialias")
    data = ops.read_file(path)
    plain = np.asarray(image.decode_random_resized_crop((24, 32), **whole)(data))
    with Image.open(path) as im:
        want = np.asarray(im.convert("RGB").resize((32, 24), Image.BILINEAR))
    np.testing.assert_array_equal(plain, want)
    flipped = np.asarray(image.decode_random_resized_crop((24, 32), flip=1.0, **whole)(data))
    np.testing.assert_array_equal(flipped, plain[:, ::-1])


# In a pipeline, decode_random_resized_crop draws from the item's seed: the same item gets the
# same crop in two pipelines and at any concurrency, and epoch 1 draws anew.
def test_decode_random_resized_crop_follows_the_item(image_files):
    def run(concurrency):
        pipe = (ferry.source(image_files["jpeg"], sampling=ferry.Sampling(seed=5))
                .map(ops.read_file, executor="io")
                .map(image.decode_random_resized_crop(16, flip=0.5), concurrency=concurrency)
                .build(threads=2))
        with pipe:
            return [np.asarray(x) for x in pipe], [np.asarray(x) for x in pipe]

    first, second = run(1)
    again, _ = run(3)
    assert all(x.shape == (16, 16, 3) for x in first)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(first, second))


# horizontal_flip, resize and to_tensor as stages: numpy's mirror, Pillow's resize
# ('antialias'), and the same pixels as a u8 tensor.
def test_image_ops_in_a_chain(image_files):
    path = image_files["png"][1]
    src = pillow(path)
    flipped, = list(ferry.source([path]).map(ops.read_file).map(image.decode_image())
                    .map(image.horizontal_flip).build(threads=1))
    np.testing.assert_array_equal(np.asarray(flipped), src[:, ::-1])
    small, = list(ferry.source([path]).map(ops.read_file).map(image.decode_image())
                  .map(image.resize(30, interp="antialias")).build(threads=1))
    with Image.open(path) as im:
        np.testing.assert_array_equal(
            np.asarray(small), np.asarray(im.convert("RGB").resize((30, 30), Image.BILINEAR)))
    t, = list(ferry.source([path]).map(ops.read_file).map(image.decode_image())
              .map(image.to_tensor).build(threads=1))
    assert isinstance(t, ferry.Tensor) and t.dtype == "u8" and t.shape == (72, 96, 3)
    np.testing.assert_array_equal(np.asarray(t), src)


# A chain of native ops over a list of paths takes the GIL for no item (the paths were made
# C++ strings when the source was built); the same chain with one Python stage takes it at
# least once per item. Counted by the module's own GIL acquisitions, whatever the timing.
def test_native_chain_takes_no_gil_per_item(image_files):
    paths = image_files["png"] * 10  # 240 items

    def acquisitions(pipe):
        before = ferry._ferry._gil_acquisitions()
        n = sum(x.shape[0] for x in pipe)
        assert n == len(paths)
        return ferry._ferry._gil_acquisitions() - before

    native = (ferry.source(paths)
              .map(ops.read_file, concurrency=4, executor="io")
              .map(image.decode_image(resize=16), concurrency=2)
              .batch(8)
              .map(ops.collate)
              .build(threads=2))
    with native:
        assert acquisitions(native) == 0
    with_python = (ferry.source(paths)
                   .map(ops.read_file, concurrency=4, executor="io")
                   .map(image.decode_image(resize=16), concurrency=2)
                   .map(lambda img: img)
                   .batch(8)
                   .map(ops.collate)
                   .build(threads=2))
    with with_python:
        assert acquisitions(with_python) >= len(paths)


# A native op fed the wrong kind of value fails that item, naming what it expected and what it
# got; with on_error='skip' the rest goes on. Never a crash.
def test_native_op_given_the_wrong_value_fails_the_item(image_files):
    pipe = (ferry.source([image_files["png"][0], 7, image_files["png"][2]])
            .map(ops.read_file, on_error="skip")
            .map(image.decode_image())
            .build(threads=1, max_epoch_failure_rate=1.0))
    assert [x.shape for x in pipe] == [(48, 64, 3), (48, 64, 3)]
    failures = pipe.failures()
    assert len(failures) == 1
    assert failures[0].item == 1 and failures[0].stage == "map#1"
    assert failures[0].code == "invalid_argument"
    assert failures[0].message == "read_file expects a path (str or os.PathLike), got an int"
    with pytest.raises(ferry.StageError) as e:
        list(ferry.source([b"not a path"]).map(image.decode_image()).build(threads=1))
    assert "decode_image expects bytes" not in str(e.value)  # a Python bytes is bytes-like
    assert isinstance(e.value.__cause__, ferry.DecodeError)


# A Python filter lends its predicate a Python copy of a path and keeps the native string: the
# read after it takes the GIL for no item (one acquisition per filter call, none per read), and
# bytes and images are lent without a copy and taken back.
def test_python_filter_keeps_native_values_native(image_files):
    paths = image_files["png"] * 5  # 120 items
    before = ferry._ferry._gil_acquisitions()
    with (ferry.source(paths)
          .filter(lambda p: p.endswith(".png"))
          .map(ops.read_file, executor="io")
          .filter(lambda b: len(b) > 0)
          .map(image.decode_image())
          .build(threads=1)) as pipe:
        images = list(pipe)
        taken = ferry._ferry._gil_acquisitions() - before
    assert len(images) == len(paths)
    assert all(isinstance(x, ferry.Image) for x in images)
    assert taken == 2 * len(paths)  # the two filters' calls
