# SPDX-License-Identifier: Apache-2.0
"""ferry.sources.files and ferry.sources.lines: a folder's files and a list file's lines as lists
of str, in the order ferry's C++ sources give them (checked against Python's own walk and
split), visited natively by ferry.source; a missing folder or file is a ferry.IOError naming it."""
import os
import pathlib

import pytest
from conftest import run_counting_gil

import ferry
from ferry import ops


def walk(root, endings, recursive):
    """The regular files (and links to files) under root, as Python finds them, sorted as
    std::filesystem::path compares: element by element."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and (not endings or name.lower().endswith(endings)):
                out.append(path)
        if not recursive:
            break
    return sorted(out, key=lambda p: pathlib.PurePosixPath(p).parts)


@pytest.fixture()
def tree(tmp_path):
    """Files in a root, in subfolders two deep, with endings of mixed case, a name that sorts
    differently as a string than as a path ('a-b/...' against 'a/...'), a link to a file, a link
    to a folder (not followed), a FIFO (not a regular file) and an empty folder."""
    root = tmp_path / "data"
    for rel in ["b.JPG", "a.jpg", "notes.txt", "a/z.jpg", "a/deep/x.png", "a-b/y.jpg",
                "c/é.jpg", "c/.hidden.jpg"]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rel.encode())
    (root / "empty").mkdir()
    os.symlink(root / "a.jpg", root / "link.jpg")
    os.symlink(root / "a", root / "folder-link")
    os.mkfifo(root / "pipe.jpg")
    return root


def test_files_lists_as_the_cpp_source_sorts(tree):
    for extensions, endings in [(None, ()), ([".jpg"], (".jpg",)),
                                ([".JPG", "png"], (".jpg", ".png"))]:
        for recursive in (False, True):
            got = ferry.sources.files(tree, extensions, recursive=recursive)
            assert got == walk(str(tree), endings, recursive), (extensions, recursive)
    everything = ferry.sources.files(str(tree), recursive=True)
    assert str(tree / "a" / "z.jpg") in everything and str(tree / "link.jpg") in everything
    assert str(tree / "pipe.jpg") not in everything
    assert not any("folder-link" in p for p in everything)
    # 'a/...' before 'a-b/...': path order, not string order.
    assert everything.index(str(tree / "a" / "z.jpg")) < everything.index(str(tree / "a-b" /
                                                                                 "y.jpg"))


def test_a_files_list_is_a_native_source(tree):
    paths = ferry.sources.files(tree, [".jpg"], recursive=True)
    items, takes = run_counting_gil(ferry.source(paths).map(ops.read_file, executor="io"))
    assert [bytes(b) for b in items] == [pathlib.Path(p).read_bytes() for p in paths]
    assert takes == 0


def test_files_of_a_missing_folder_or_a_file_names_it(tmp_path):
    with pytest.raises(ferry.IOError, match="nowhere") as e:
        ferry.sources.files(tmp_path / "nowhere")
    assert isinstance(e.value, OSError)
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(ferry.IOError, match="f.txt"):
        ferry.sources.files(tmp_path / "f.txt")


def test_lines_skips_blank_lines_and_carriage_returns(tmp_path):
    text = ("s3://bucket/a.jpg\r\n"
            "\n"
            "   \t \r\n"
            "  padded line kept as it is  \n"
            "https://host/é.png?x=1\n"
            "last line without a newline")
    (tmp_path / "list.txt").write_bytes(text.encode())
    expected = [line for line in text.replace("\r\n", "\n").split("\n")
                if line.strip(" \t") != ""]
    got = ferry.sources.lines(tmp_path / "list.txt")
    assert got == expected and len(got) == 4
    assert ferry.sources.lines(str(tmp_path / "list.txt")) == expected
    (tmp_path / "empty.txt").write_bytes(b"")
    assert ferry.sources.lines(tmp_path / "empty.txt") == []
    many = [f"/data/{i:07d}.jpg" for i in range(200_000)]
    (tmp_path / "many.txt").write_text("\n".join(many) + "\n")
    with ferry.source(ferry.sources.lines(tmp_path / "many.txt")).build() as pipe:
        assert list(pipe) == many


def test_lines_of_a_missing_file_names_it(tmp_path):
    with pytest.raises(ferry.IOError, match="missing.txt"):
        ferry.sources.lines(tmp_path / "missing.txt")
    with pytest.raises(ferry.IOError):
        ferry.sources.lines(tmp_path)  # a folder is not a list file
