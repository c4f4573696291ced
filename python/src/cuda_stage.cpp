// SPDX-License-Identifier: Apache-2.0
/// \file
/// `Builder.to_cuda(...)`: every `ferry.Tensor` and `ferry.Image` of an element (inside lists
/// and tuples too) copied to a CUDA device with C++'s transfer (`ferry::cuda::transfer_context`:
/// pinned staging, its own stream, a caching device allocator), arriving as a `ferry.Tensor`
/// whose `__dlpack_device__` is (kDLCUDA, device). Built without CUDA, or run without a device,
/// `build()` raises the transfer's own error (`ferry.Error`, `.code == "cuda"`).
///
/// The copy is asynchronous, but `Tensor.__dlpack__` cannot hand the consumer's stream the
/// copy's event (a `ferry::tensor` carries none), so the stage waits for each copy before it
/// passes the element on; it runs on its own I/O thread, so the wait holds no compute thread.
#include "cuda_stage.hpp"

#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "builder.hpp"
#include "ferry/cuda.hpp"
#include "ferry/error.hpp"
#include "value.hpp"

namespace ferry::python {
namespace {

/// The pixels of `img` as a u8 H x W x C tensor that keeps the image alive.
ferry::tensor image_tensor(ferry::image&& img) {
    auto held = std::make_shared<ferry::image>(std::move(img));
    auto pixels = held->data();
    ferry::buffer storage{reinterpret_cast<std::byte*>(pixels.data()), pixels.size(),
                          std::shared_ptr<void>(held), ferry::device{}};
    return ferry::tensor(std::move(storage), ferry::dtype::u8,
                         {held->height(), held->width(), held->channels()});
}

/// `t` copied to the device, the copy finished, as a `ferry::tensor` in device memory that keeps
/// the `cuda_tensor` (and so its pool's block) alive.
ferry::tensor to_device(const ferry::tensor& t, ferry::cuda::transfer_context& ctx) {
    if (t.device().kind == ferry::device_kind::cuda) return t;  // already there
    auto held = std::make_shared<ferry::cuda_tensor>(ctx.copy(t));
    held->synchronize();
    const ferry::tensor& d = held->as_tensor();
    ferry::buffer storage{static_cast<std::byte*>(held->data()), d.nbytes(),
                          std::shared_ptr<void>(held), d.device()};
    return ferry::tensor(std::move(storage), d.dtype(), d.shape(), d.strides());
}

value transfer(value&& v, ferry::cuda::transfer_context& ctx) {
    if (v.holds<ferry::tensor>()) return to_device(v.as<ferry::tensor>(), ctx);
    if (v.holds<ferry::image>())
        return to_device(image_tensor(std::move(v.as<ferry::image>())), ctx);
    if (v.holds<value_list>()) {
        for (auto& x : v.as<value_list>()) x = transfer(std::move(x), ctx);
        return std::move(v);
    }
    if (v.holds<value_tuple>()) {
        for (auto& x : v.as<value_tuple>().items) x = transfer(std::move(x), ctx);
        return std::move(v);
    }
    if (v.holds<py_ref>()) {
        throw ferry::invalid_argument(
            "to_cuda: copies ferry.Tensor and ferry.Image values (and those inside lists and "
            "tuples), got " +
            kind_of(v) + "; return ferry.tensor(x) from the Python stage before it");
    }
    return std::move(v);  // labels, paths, bytes, None: along unchanged
}

/// `values` (means or stds) as floats, each finite, and for `std` none 0.
std::vector<float> channel_values(const std::vector<double>& values, const char* what) {
    std::vector<float> out;
    for (const double x : values) {
        if (!std::isfinite(x) || (std::string(what) == "std" && x == 0)) {
            throw ferry::invalid_argument(
                std::string("to_cuda(") + what + "=...): " + std::to_string(x) +
                " is not a finite number" + (std::string(what) == "std" ? " other than 0" : ""));
        }
        out.push_back(static_cast<float>(x));
    }
    return out;
}

detail::stage_spec cuda_stage(ferry::cuda_options options, std::string name) {
    detail::stage_spec s;
    s.kind = detail::stage_kind::map;
    s.options.concurrency = 1;
    s.options.name = std::move(name);
    s.options.ordered = true;
    // The stage waits for each copy: on a thread of its own, not the compute arena's.
    s.options.executor = ferry::io;
    s.map_fn = [](detail::any_value&, detail::any_value&, bool) {
        throw ferry::error(ferry::errc::internal, "to_cuda: the stage ran without being built");
    };
    s.on_build = [options = std::move(options)](detail::stage_spec& self) {
        std::shared_ptr<ferry::cuda::transfer_context> ctx =
            ferry::cuda::make_transfer_context(options);
        self.map_fn = [ctx](detail::any_value& in, detail::any_value& out, bool) {
            value result = transfer(in.take_as<value>(), *ctx);
            out.emplace<value>(std::move(result));
        };
        if (ctx->options().pinned_batches) self.input_allocator = ctx->pinned().as_allocator();
    };
    return s;
}

}  // namespace

void bind_cuda_stage(py::module_& m) {
    m.def("cuda_built", &ferry::cuda::built_with_cuda,
          "True when ferry was built with CUDA (FERRY_CUDA); cuda_device_count() may still be 0.");
    m.def("cuda_device_count", &ferry::cuda::device_count,
          "CUDA devices this process can use: 0 without a driver, a device, or a CUDA build.");

    auto builder = py::reinterpret_borrow<py::class_<py_builder>>(m.attr("Builder"));
    builder.def(
        "to_cuda",
        [](const py_builder& b, int device, bool normalize, const std::vector<double>& mean,
           const std::vector<double>& std, bool chw, bool pinned_batches,
           std::size_t pinned_cache_bytes, std::size_t device_cache_bytes, const py::object& name) {
            if (device < 0) {
                throw ferry::invalid_argument("to_cuda(device=" + std::to_string(device) +
                                              "): a CUDA device ordinal, 0 or more");
            }
            ferry::cuda_options o;
            o.device = device;
            o.pinned_batches = pinned_batches;
            o.pinned_cache_bytes = pinned_cache_bytes;
            o.device_cache_bytes = device_cache_bytes;
            if (normalize) {
                if (mean.empty() || mean.size() != std.size()) {
                    throw ferry::invalid_argument(
                        "to_cuda(normalize=True): mean and std need one value per channel, got " +
                        std::to_string(mean.size()) + " and " + std::to_string(std.size()));
                }
                o.normalize = ferry::cuda_normalize{channel_values(mean, "mean"),
                                                    channel_values(std, "std"), chw};
            }
            return b.with(
                cuda_stage(std::move(o), name.is_none() ? "to_cuda" : name.cast<std::string>()));
        },
        py::arg("device") = 0, py::kw_only(), py::arg("normalize") = false,
        py::arg("mean") = std::vector<double>{0.485, 0.456, 0.406},
        py::arg("std") = std::vector<double>{0.229, 0.224, 0.225}, py::arg("chw") = true,
        py::arg("pinned_batches") = true, py::arg("pinned_cache_bytes") = std::size_t{1} << 30,
        py::arg("device_cache_bytes") = std::size_t{4} << 30, py::arg("name") = py::none(),
        R"doc(
Copies every ferry.Tensor and ferry.Image of each element (inside lists and tuples too; labels
and other values come along unchanged) to CUDA device `device`, as C++'s to_cuda(): pinned
staging, a stream of its own, a caching device allocator. Each arrives as a ferry.Tensor in
device memory (__dlpack_device__ (2, device); torch.from_dlpack gives a cuda tensor), its copy
finished. normalize=True turns u8 images (H x W x C, or N x H x W x C) into f32 on the device,
(x / 255 - mean) / std, C x H x W when chw. pinned_batches: the map right before (ops.collate)
builds its batch in pinned memory. A Python object is a failure: return ferry.tensor(x).
build() raises ferry.Error (.code 'cuda') where ferry was built without CUDA or no device is
there.)doc");
}

}  // namespace ferry::python
