# SPDX-License-Identifier: Apache-2.0
"""ferry.sources: image_folder lists an image folder natively, its source gives labelled items
([path, label]) that native ops map keeping the label, and collate stacks the labels."""
import numpy as np
import pytest
from PIL import Image

import ferry
from ferry import image, ops

# The folder every test below lists: class -> how many PNG files (an empty class still counts).
CLASSES = {"cat": 3, "dog": 5, "empty": 0, "frog": 2}


@pytest.fixture()
def folder(tmp_path):
    """tmp_path/<class>/<i>.png (gray, 6 x 4, every pixel the file's number), plus a text file in
    a class folder and a PNG directly in the root (neither is an image of a class with
    extensions=['.png']). Returns (root, [(path, label, pixel)] in the listing's order)."""
    listing = []
    n = 0
    for label, (name, count) in enumerate(sorted(CLASSES.items())):
        (tmp_path / name).mkdir()
        for i in range(count):
            path = tmp_path / name / f"{i:02d}.png"
            Image.fromarray(np.full((4, 6), n, np.uint8)).save(path)
            listing.append((str(path), label, n))
            n += 1
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    Image.fromarray(np.zeros((4, 6), np.uint8)).save(tmp_path / "stray.png")
    return tmp_path, listing


# image_folder lists the classes (sorted subfolders, an empty one included) and each class's
# files sorted, labelled by their class's index; extensions leaves other files out.
def test_image_folder_lists_files_labels_and_classes(folder):
    root, listing = folder
    files = ferry.sources.image_folder(root, extensions=[".png"])
    assert files.classes == ["cat", "dog", "empty", "frog"]
    assert len(files) == 10
    assert files.paths == [p for p, _, _ in listing]
    assert files.labels == [0, 0, 0, 1, 1, 1, 1, 1, 3, 3]
    assert files[0] == (listing[0][0], 0) and files[-1] == (listing[-1][0], 3)
    with pytest.raises(IndexError):
        files[10]
    assert repr(files) == "<ferry.sources.LabelledFiles: 10 files, 4 classes>"
    # A slice is LabelledFiles too, with every class kept so that labels mean the same.
    every_third = files[::3]
    assert isinstance(every_third, ferry.sources.LabelledFiles)
    assert every_third.classes == files.classes
    assert list(every_third) == [files[i] for i in (0, 3, 6, 9)]
    # Without extensions every regular file of a class folder is listed (the root's are not).
    everything = ferry.sources.image_folder(str(root))
    assert len(everything) == 11 and str(root / "dog" / "notes.txt") in everything.paths


# A missing folder is ferry.IOError (an OSError) naming it, raised by image_folder itself.
def test_image_folder_of_a_missing_folder_names_it(tmp_path):
    with pytest.raises(ferry.IOError) as e:
        ferry.sources.image_folder(tmp_path / "nowhere")
    assert isinstance(e.value, OSError) and "nowhere" in str(e.value)


# Its source visits the files in the listing's order by default, each item the list
# [path, label].
def test_folder_source_gives_labelled_items_in_order(folder):
    root, listing = folder
    files = ferry.sources.image_folder(root, extensions=[".png"])
    items = list(ferry.source(files).build(threads=1))
    assert items == [[p, label] for p, label, _ in listing]


# With shuffle sampling each epoch is a permutation of its own, the same one a list of as many
# paths gets from the same Sampling (the order is the sampler's, not the folder's); rank and
# world_size split it as they split a list.
def test_folder_source_follows_the_sampling(folder):
    root, listing = folder
    files = ferry.sources.image_folder(root, extensions=[".png"])
    sampling = ferry.Sampling(shuffle=True, seed=7)
    pipe = ferry.source(files, sampling=sampling).build(threads=1)
    epochs = [list(pipe), list(pipe)]
    reference = ferry.source(list(range(len(files))), sampling=sampling).build(threads=1)
    for got, order in zip(epochs, [list(reference), list(reference)]):
        assert got == [[listing[i][0], listing[i][1]] for i in order]
        assert sorted(got) == sorted([p, label] for p, label, _ in listing)
    assert epochs[0] != epochs[1]
    assert epochs[0] != [[p, label] for p, label, _ in listing]
    shares = [list(ferry.source(files, sampling=ferry.Sampling(seed=7, rank=r, world_size=2))
                   .build(threads=1)) for r in (0, 1)]
    assert [len(s) for s in shares] == [5, 5]
    assert sorted(shares[0] + shares[1]) == sorted([p, label] for p, label, _ in listing)


# read_file and decode_image map a labelled item's path and bytes keeping its label, and
# collate stacks a batch of them into [images, labels]: the pixels are the files' and the labels
# an int64 tensor, both zero-copy into torch; and the chain takes the GIL for no item.
def test_native_chain_keeps_labels_and_collates_them(folder):
    torch = pytest.importorskip("torch")
    root, listing = folder
    files = ferry.sources.image_folder(root, extensions=[".png"])
    before = ferry._ferry._gil_acquisitions()
    with (ferry.source(files)
          .map(ops.read_file, concurrency=2, executor="io")
          .map(image.decode_image(format="gray"), concurrency=2)
          .batch(4)
          .map(ops.collate)
          .build(threads=2)) as pipe:
        batches = [(torch.from_dlpack(x), torch.from_dlpack(y)) for x, y in pipe]
    assert ferry._ferry._gil_acquisitions() - before == 0
    assert [tuple(x.shape) for x, _ in batches] == [(4, 4, 6, 1), (4, 4, 6, 1), (2, 4, 6, 1)]
    assert all(y.dtype == torch.int64 for _, y in batches)
    labels = torch.cat([y for _, y in batches]).tolist()
    pixels = torch.cat([x for x, _ in batches])
    assert labels == [label for _, label, _ in listing]
    assert pixels.flatten(1).tolist() == [[n] * 24 for _, _, n in listing]


# A Python stage's labelled item ([x, label] or (x, label), an int label) keeps its label through
# a native op as a source's does: the op maps x, the label stays, a list stays a list and a tuple
# a tuple. A pair whose second element is not an int is not a labelled item: the op gets the
# whole pair and says so.
def test_a_python_stages_labelled_items_keep_their_labels(folder):
    root, listing = folder
    paths = [p for p, _, _ in listing[:4]]

    def pair(i_path):
        i, path = i_path
        with open(path, "rb") as f:
            data = f.read()
        return [data, i] if i % 2 == 0 else (data, i)

    with (ferry.source(list(enumerate(paths)))
          .map(pair)
          .map(image.decode_image(format="gray"))
          .build(threads=1)) as pipe:
        got = list(pipe)
    assert [type(item).__name__ for item in got] == ["list", "tuple", "list", "tuple"]
    assert [label for _, label in got] == [0, 1, 2, 3]
    assert [int(np.asarray(img)[0, 0, 0]) for img, _ in got] == [n for _, _, n in listing[:4]]
    with (ferry.source([paths[0]])
          .map(lambda p: [open(p, "rb").read(), "cat"])
          .map(image.decode_image(), on_error="skip")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        assert list(pipe) == []
        [failure] = pipe.failures()
    assert "got a Python list" in failure.message, failure.message


# A labelled item that fails is named by its path, and the others keep their labels.
def test_failed_labelled_item_is_named_by_its_path(folder):
    root, listing = folder
    broken = root / "frog" / "99.png"
    broken.write_bytes(b"not a png")
    files = ferry.sources.image_folder(root, extensions=[".png"])
    pipe = (ferry.source(files)
            .map(ops.read_file)
            .map(image.decode_image(), on_error="skip")
            .map(image.to_tensor)
            .build(threads=1, max_epoch_failure_rate=1.0))
    labels = [label for _, label in pipe]
    assert labels == [label for _, label, _ in listing]
    failure, = pipe.failures()
    assert failure.input == str(broken) and failure.item == 10
    assert failure.code == "decode"


# A source's tuples of plain data (str, int, float, None, such tuples) are native values: a
# Python stage gets them back equal, as tuples, and collate makes ints an int64 tensor and floats
# a float64 one; a tuple holding anything else stays the Python tuple, the very object.
def test_plain_tuples_from_a_source_are_native_and_come_back_equal():
    marker = object()
    items = [("a.wav", 3, 0.5, None, (1, 2.5)), ("b.wav", -1, 2.0, None, (3, 4.0)),
             ("c.wav", 2**70, 1.0), ("d.wav", marker), 1.5]
    with ferry.source(items).map(lambda x: x).build(threads=1) as pipe:
        got = list(pipe)
    assert got == items and type(got[0]) is tuple and type(got[0][4]) is tuple
    assert got[3][1] is marker
    assert type(got[4]) is float
    segments = [(path, label, start, pair) for path, label, start, _, pair in items[:2]]
    with ferry.source(segments).batch(2).map(ops.collate).build(threads=1) as pipe:
        [(paths, ints, floats, (firsts, seconds))] = list(pipe)
    assert paths == ["a.wav", "b.wav"]
    assert ints.dtype == "i64" and np.asarray(ints).tolist() == [3, -1]
    assert floats.dtype == "f64" and np.asarray(floats).tolist() == [0.5, 2.0]
    assert np.asarray(firsts).tolist() == [1, 3] and np.asarray(seconds).tolist() == [2.5, 4.0]
    with pytest.raises(ferry.StageError) as e:
        list(ferry.source([0.5, 1]).batch(2).map(ops.collate).build(threads=1))
    assert str(e.value.__cause__) == (
        "collate expects a list of floats, all of one kind; element 0 is a float, element 1 is "
        "an int")


# collate takes a batch of tuples as torch's default_collate does: position by position, arrays
# stacked, ints an int64 tensor, str a list; and refuses one whose elements do not line up,
# naming the odd element.
def test_collate_stacks_tuples_position_by_position():
    pipe = (ferry.source(range(4))
            .map(lambda i: (np.full(3, i, np.float32), i, f"item{i}"))
            .batch(4)
            .map(ops.collate)
            .build(threads=1))
    (x, y, names), = list(pipe)
    assert x.shape == (4, 3) and x.dtype == "f32" and y.shape == (4,) and y.dtype == "i64"
    np.testing.assert_array_equal(np.asarray(x), np.repeat(np.arange(4.0), 3).reshape(4, 3))
    assert np.asarray(y).tolist() == [0, 1, 2, 3]
    assert names == ["item0", "item1", "item2", "item3"]
    with pytest.raises(ferry.StageError) as e:
        list(ferry.source([(1, 2), (3, 4), (5, 6, 7)]).batch(3).map(ops.collate).build(threads=1))
    assert isinstance(e.value.__cause__, ferry.InvalidArgument)
    assert str(e.value.__cause__) == (
        "collate expects lists of 2 elements each, as element 0 is; element 2 has 3")
