// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.shards.tar_samples` and `TarSamples`: tar shards in WebDataset's layout as a native,
/// positioned source of samples (shard_samples.hpp says what a sample is in Python).
#include <pybind11/stl.h>

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convert.hpp"
#include "ferry/detail/redact.hpp"
#include "ferry/from.hpp"
#include "ferry/shards.hpp"
#include "io_ops.hpp"
#include "shard_samples.hpp"

namespace ferry::python {
namespace {

/// `ferry.shards.TarSamples`: what `tar_samples(...)` returns, for `ferry.source` (immutable,
/// shared with the sources made of it).
struct py_tar_samples {
    std::shared_ptr<const ferry::sources::tar_samples_source> src;
};

/// A cursor over one epoch of `epoch`'s samples, each as a sample value.
detail::source_cursor tar_cursor(ferry::sources::tar_epoch epoch) {
    struct state {
        ferry::sources::tar_epoch samples;
        ferry::sources::tar_epoch::iterator at{};
        bool started = false;
    };
    auto st = std::make_shared<state>(state{std::move(epoch)});
    return [st](detail::any_value& out) {
        if (!st->started) {
            st->at = st->samples.begin();  // after the move into st: it points at st->samples
            st->started = true;
        } else {
            ++st->at;
        }
        if (st->at == std::default_sentinel) return false;
        out.emplace<value>(sample_value(*st->at));
        return true;
    };
}

/// The shards as the C++ source takes them: each a str or os.PathLike (a path or a URL).
std::vector<std::string> shard_names(const py::handle& shards) {
    if (PyUnicode_Check(shards.ptr()) != 0 || PyBytes_Check(shards.ptr()) != 0) {
        throw py::type_error(std::string("tar_samples(shards): shards is a ") +
                             Py_TYPE(shards.ptr())->tp_name +
                             "; give a list of shards (paths or URLs)");
    }
    std::vector<std::string> out;
    for (const auto& s : py::iter(shards)) {
        out.push_back(take_path(source_element(s), "tar_samples(shards)"));
    }
    return out;
}

}  // namespace

std::optional<detail::source_spec> tar_source(py::handle src,
                                              const std::optional<ferry::sampling>& sampling) {
    if (!py::isinstance<py_tar_samples>(src)) return std::nullopt;
    if (sampling) {
        throw py::type_error(
            "ferry.source(tar, sampling=...): a TarSamples is visited in its own order; give "
            "the sampling to ferry.shards.tar_samples(shards, sampling=...)");
    }
    auto held = src.cast<const py_tar_samples&>().src;
    auto b = detail::make_source<value>(
        [held](std::uint64_t epoch) { return tar_cursor((*held)(epoch)); }, {}, 0,
        [held](std::uint64_t epoch, std::uint64_t position) {
            return tar_cursor((*held)(epoch, position));
        });
    auto named = b.describe([](const value& v) {
        // describe's values are the source's own, made just now; sample_path reads them in place.
        return sample_path(const_cast<value&>(v));
    });
    return detail::source_access::source(named);
}

void bind_shard_ops(py::module_& shards) {
    py::class_<py_tar_samples>(shards, "TarSamples", R"doc(
Tar shards in WebDataset's layout, ready to read (ferry::sources::tar_samples_source): pass it to
ferry.source. Each item is a sample, the tuple of (name, value) pairs
((ext, ferry.Bytes) per member in extension order, then ("__key__", key) and ("__url__", shard);
a damaged sample also ("__damage__", (code, message, path))): dict(sample) is WebDataset's sample
dict. The native ops field, fields and labelled read its members.)doc")
        .def_property_readonly(
            "shards",
            [](const py_tar_samples& self) {
                py::list out;
                for (const auto& s : self.src->shards()) out.append(to_python(value(s)));
                return out;
            },
            "The shards, as given.")
        .def("__repr__", [](const py_tar_samples& self) {
            return "<ferry.shards.TarSamples: " + std::to_string(self.src->shards().size()) +
                   " shards>";
        });

    shards.def(
        "tar_samples",
        [](const py::object& shard_list, const std::optional<ferry::sampling>& sampling,
           std::size_t shuffle_buffer, std::uint64_t max_member_bytes,
           std::uint64_t max_sample_bytes, std::size_t max_sample_members,
           const py::object& read_remote, std::size_t remote_chunk) {
            ferry::sources::tar_options o;
            if (sampling) o.sampling = *sampling;
            o.shuffle_buffer = shuffle_buffer;
            o.max_member_bytes = max_member_bytes;
            o.max_sample_bytes = max_sample_bytes;
            o.max_sample_members = max_sample_members;
            if (remote_chunk == 0) {
                throw ferry::invalid_argument(
                    "tar_samples(remote_chunk=...): remote_chunk is a positive number of bytes");
            }
            o.remote_chunk = remote_chunk;
            if (!read_remote.is_none()) {
#ifdef FERRY_PYTHON_HTTP
                if (!py::isinstance<py_read_url>(read_remote)) {
                    throw py::type_error(
                        std::string("tar_samples(read_remote=...): read_remote is "
                                    "ferry.http.read_url or read_url(**options), got a Python ") +
                        Py_TYPE(read_remote.ptr())->tp_name);
                }
                o.read_remote =
                    ferry::ops::url_ranges{*read_remote.cast<const py_read_url&>().options};
#else
                throw py::type_error(
                    "tar_samples(read_remote=...): remote shards are read by ferry.http, which "
                    "this build lacks (configure ferry with -DFERRY_HTTP=ON)");
#endif
            }
            std::vector<std::string> names = shard_names(shard_list);
            return py_tar_samples{std::make_shared<const ferry::sources::tar_samples_source>(
                ferry::sources::tar_samples(std::move(names), o))};
        },
        py::arg("shards"), py::kw_only(), py::arg("sampling") = py::none(),
        py::arg("shuffle_buffer") = 0, py::arg("max_member_bytes") = std::uint64_t{1} << 30,
        py::arg("max_sample_bytes") = std::uint64_t{1} << 30, py::arg("max_sample_members") = 256,
        py::arg("read_remote") = py::none(), py::arg("remote_chunk") = std::size_t{8} << 20, R"doc(
Samples from tar shards in WebDataset's layout (.tar, .tar.gz, .tar.zst, .tar.xz, .tar.bz2,
.tar.lz4), ferry::sources::tar_samples: each shard read as a stream, its consecutive members
with one key one sample (dir/000123.jpg + dir/000123.cls: key dir/000123, members jpg and cls).
shards: paths or file:// URLs; with read_remote=ferry.http.read_url (or read_url(**options)) also
s3:// and https:// URLs, read in remote_chunk range requests. sampling (a ferry.Sampling) orders
and splits the shards per epoch (shuffled per (seed, epoch), rank's share); shuffle_buffer
shuffles samples in a buffer of that many; max_member_bytes, max_sample_bytes and
max_sample_members bound what one sample takes (past them it is damaged). A damaged shard (cut,
bad header, missing) gives damaged samples that fail the first stage that reads their members,
named <shard>#<key> in failures(); the epoch goes on. A pipeline over it resumes exactly
(build(resume=...)), opening the epoch at its position without reading what came before.

    tar = ferry.shards.tar_samples(shards, sampling=ferry.Sampling(shuffle=True, seed=1),
                                   shuffle_buffer=1000)
    pipe = (ferry.source(tar)
            .map(ferry.shards.labelled("jpg", "cls"))     # [bytes, label], natively
            .map(ferry.image.decode_image(resize=224), on_error="skip")
            .batch(64).map(ferry.ops.collate).build())  # [images, labels])doc");

    bind_sample_ops(shards);
}

}  // namespace ferry::python
