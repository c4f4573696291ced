// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.sources.image_folder` and `LabelledFiles`, and the native source made of them; the
/// listings `files` and `lines`, lists of str that `ferry.source` visits natively.
#include "folder_sources.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstdint>
#include <filesystem>
#include <ranges>
#include <string>
#include <utility>
#include <vector>

#include "convert.hpp"
#include "ferry/from.hpp"
#include "value.hpp"

namespace ferry::python {
namespace {

using labelled_files = ferry::sources::labelled_files;

/// File `i` of `files` as a labelled item: the list value [path, label].
value labelled_item(const labelled_files& files, std::size_t i) {
    const auto& f = files[i];
    value_list pair;
    pair.reserve(2);
    pair.emplace_back(f.path.string());
    pair.emplace_back(static_cast<std::int64_t>(f.label));
    return value(std::move(pair));
}

/// `files[i]` as Python sees it: the tuple (path, label); a negative `i` counts from the end.
py::tuple labelled_file_at(const py_labelled_files& self, std::int64_t i) {
    const auto n = static_cast<std::int64_t>(self.files->size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw py::index_error("LabelledFiles index out of range");
    const auto& f = (*self.files)[static_cast<std::size_t>(i)];
    return py::make_tuple(to_python(value(f.path.string())), f.label);
}

/// `files[start:stop:step]`: those files, the same classes (every class kept, even one left
/// with no file, so that labels mean the same).
py_labelled_files labelled_files_slice(const py_labelled_files& self, const py::slice& slice) {
    py::ssize_t start = 0;
    py::ssize_t stop = 0;
    py::ssize_t step = 0;
    py::ssize_t count = 0;
    if (!slice.compute(static_cast<py::ssize_t>(self.files->size()), &start, &stop, &step,
                       &count)) {
        throw py::error_already_set();
    }
    std::vector<ferry::sources::labelled_file> kept;
    kept.reserve(static_cast<std::size_t>(count));
    for (py::ssize_t i = 0; i < count; ++i) {
        kept.push_back((*self.files)[static_cast<std::size_t>(start + i * step)]);
    }
    return py_labelled_files{
        std::make_shared<const labelled_files>(std::move(kept), self.files->classes())};
}

}  // namespace

std::optional<detail::source_spec> folder_source(py::handle src, const ferry::sampling& sampling) {
    if (!py::isinstance<py_labelled_files>(src)) return std::nullopt;
    std::shared_ptr<const labelled_files> files = src.cast<const py_labelled_files&>().files;
    const auto n = static_cast<std::int64_t>(files->size());
    auto items =
        std::views::iota(std::int64_t{0}, n) | std::views::transform([files](std::int64_t i) {
            return labelled_item(*files, static_cast<std::size_t>(i));
        });
    auto named = ferry::from(std::move(items), sampling).describe([](const value& v) {
        const auto& pair = v.as<value_list>();
        return pair.front().as<std::string>();
    });
    return detail::source_access::source(named);
}

void bind_folder_sources(py::module_& sources) {
    py::class_<py_labelled_files>(sources, "LabelledFiles", R"doc(
The files of an image folder and their labels, listed once (ferry::sources::labelled_files): a
sequence of (path, label) tuples, class by class, each class's files sorted by path; classes[label]
is a file's class name. ferry.source(files, sampling=...) visits it natively: each item is the
list [path, label], which ops.read_file and the image ops map keeping the label, and which
ops.collate stacks into [data, labels] (labels an int64 tensor).)doc")
        .def("__len__", [](const py_labelled_files& self) { return self.files->size(); })
        .def("__getitem__", &labelled_file_at, py::arg("i"))
        .def("__getitem__", &labelled_files_slice, py::arg("slice"),
             "files[a:b:c]: those files as LabelledFiles, with the same classes (files[::15]: "
             "every 15th file, a subset of every class).")
        .def_property_readonly(
            "classes", [](const py_labelled_files& self) { return self.files->classes(); },
            "The class names, sorted: the subfolders of the image folder.")
        .def_property_readonly(
            "paths",
            [](const py_labelled_files& self) {
                py::list out;
                for (const auto& f : *self.files) out.append(to_python(value(f.path.string())));
                return out;
            },
            "Every file's path (str), in the listing's order.")
        .def_property_readonly(
            "labels",
            [](const py_labelled_files& self) {
                std::vector<int> out;
                out.reserve(self.files->size());
                for (const auto& f : *self.files) out.push_back(f.label);
                return out;
            },
            "Every file's label (an index into classes), in the listing's order.")
        .def("__repr__", [](const py_labelled_files& self) {
            return "<ferry.sources.LabelledFiles: " + std::to_string(self.files->size()) +
                   " files, " + std::to_string(self.files->classes().size()) + " classes>";
        });

    sources.def(
        "image_folder",
        [](const std::filesystem::path& path,
           const std::optional<std::vector<std::string>>& extensions, bool recursive) {
            ferry::sources::image_folder_options o;
            if (extensions) o.extensions = *extensions;
            o.recursive = recursive;
            labelled_files files;
            {
                py::gil_scoped_release released;  // listing a large folder takes a while
                files = ferry::sources::image_folder(path, o);
            }
            return py_labelled_files{std::make_shared<const labelled_files>(std::move(files))};
        },
        py::arg("path"), py::arg("extensions") = py::none(), py::kw_only(),
        py::arg("recursive") = true, R"doc(
An image folder, path/<class>/<file> (torchvision's ImageFolder layout), as LabelledFiles: the
classes are the subfolders of path, sorted by name (files directly in path are ignored); a
file's label is its class's index. extensions: endings to keep (e.g. [".png", ".jpg"],
case-insensitive; None: every regular file); recursive: also the files of a class folder's
subfolders. Raises ferry.IOError (an OSError) naming path when it is missing or not a folder.

    train = ferry.sources.image_folder("data/train", extensions=[".png"])
    pipe = (ferry.source(train, sampling=ferry.Sampling(shuffle=True, seed=0))
            .map(ferry.ops.read_file, concurrency=4, executor="io")  # [bytes, label]
            .map(ferry.image.decode_image(format="gray"))           # [image, label]
            .batch(64)
            .map(ferry.ops.collate)                                 # [images, labels]
            .build())
    for images, labels in pipe:
        x, y = torch.from_dlpack(images), torch.from_dlpack(labels))doc");

    sources.def(
        "files",
        [](const std::filesystem::path& path,
           const std::optional<std::vector<std::string>>& extensions, bool recursive) {
            ferry::sources::files_options o;
            if (extensions) o.extensions = *extensions;
            o.recursive = recursive;
            std::vector<std::string> found;
            {
                py::gil_scoped_release released;  // listing a large folder takes a while
                for (auto& f : ferry::sources::files(path, o)) found.push_back(f.string());
            }
            return to_python_strs(std::move(found));
        },
        py::arg("path"), py::arg("extensions") = py::none(), py::kw_only(),
        py::arg("recursive") = false, R"doc(
The regular files under path (ferry::sources::files) as a list of paths (str), sorted by path:
the same list on every machine, so that a Sampling's shuffle and rank split agree across ranks.
extensions: endings to keep (e.g. [".jpg", ".png"], case-insensitive; None: every regular file);
recursive: also the files of subfolders, at any depth (symbolic links to files are listed, links
to folders are not followed). ferry.source(list) visits it natively. Raises ferry.IOError (an
OSError) naming path when it is missing or not a folder.

    paths = ferry.sources.files("data", extensions=[".jpg"], recursive=True)
    pipe = ferry.source(paths, sampling=ferry.Sampling(shuffle=True, seed=1)).map(...))doc");

    sources.def(
        "lines",
        [](const std::filesystem::path& path) {
            std::vector<std::string> found;
            {
                py::gil_scoped_release released;  // a list of millions of URLs
                found = ferry::sources::lines(path);
            }
            return to_python_strs(std::move(found));
        },
        py::arg("path"), R"doc(
The lines of a text file (ferry::sources::lines; e.g. a list of URLs or paths) as a list of str,
in file order: a trailing '\r' is removed (CRLF files) and blank lines (empty, or only spaces and
tabs) are skipped; other lines are kept as they are. ferry.source(list) visits it natively.
Raises ferry.IOError naming path when it cannot be read.

    urls = ferry.sources.lines("train-urls.txt")
    pipe = ferry.source(urls).map(ferry.http.read_url, concurrency=32, executor="io"))doc");
}

}  // namespace ferry::python
