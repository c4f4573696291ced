// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.image`: factories of the image ops (decode_image, decode_random_resized_crop, resize)
/// and the ops without options (horizontal_flip, to_tensor), as native ops.
#include <pybind11/stl.h>

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "convert.hpp"
#include "ferry/error.hpp"
#include "ferry/image.hpp"
#include "ferry/item.hpp"
#include "ops.hpp"

namespace ferry::python {
namespace {

/// A size as Python gives it: an int (square) or (height, width), torchvision's order.
using py_size = std::variant<int, std::pair<int, int>>;

ferry::image_size image_size_of(const py_size& s, const char* what) {
    const auto [h, w] = std::holds_alternative<int>(s)
                            ? std::pair<int, int>{std::get<int>(s), std::get<int>(s)}
                            : std::get<std::pair<int, int>>(s);
    if (h <= 0 || w <= 0) {
        throw ferry::invalid_argument(std::string(what) +
                                      ": sizes are positive (height, width), got (" +
                                      std::to_string(h) + ", " + std::to_string(w) + ")");
    }
    return {w, h};
}

std::string size_text(const ferry::image_size& s) {
    return "(" + std::to_string(s.height) + ", " + std::to_string(s.width) + ")";
}

ferry::interpolation interpolation_of(const std::string& name) {
    static const std::pair<const char*, ferry::interpolation> table[] = {
        {"nearest", ferry::interpolation::nearest}, {"bilinear", ferry::interpolation::bilinear},
        {"bicubic", ferry::interpolation::bicubic}, {"area", ferry::interpolation::area},
        {"lanczos", ferry::interpolation::lanczos}, {"antialias", ferry::interpolation::antialias}};
    for (const auto& [n, i] : table) {
        if (name == n) return i;
    }
    throw ferry::invalid_argument(
        "interp must be 'nearest', 'bilinear', 'bicubic', 'area', "
        "'lanczos' or 'antialias', got '" +
        name + "'");
}

ferry::pixel_format format_of(const std::string& name) {
    static const std::pair<const char*, ferry::pixel_format> table[] = {
        {"rgb", ferry::pixel_format::rgb},
        {"bgr", ferry::pixel_format::bgr},
        {"gray", ferry::pixel_format::gray},
        {"rgba", ferry::pixel_format::rgba}};
    for (const auto& [n, f] : table) {
        if (name == n) return f;
    }
    throw ferry::invalid_argument("format must be 'rgb', 'bgr', 'gray' or 'rgba', got '" + name +
                                  "'");
}

ferry::image take_image(value&& v, const char* op) {
    if (v.holds<ferry::image>()) return std::move(v.as<ferry::image>());
    throw ferry::invalid_argument(std::string(op) + " expects an image (ferry.Image), got " +
                                  kind_of(v));
}

py::object make(std::string name, std::function<value(value&&)> fn, bool wants_item = false) {
    return py::cast(py_op{
        std::make_shared<const native_op>(native_op{std::move(name), std::move(fn), wants_item})});
}

/// The keyword arguments a factory was given, as its op's name shows them.
std::string call_text(const char* op, const std::vector<std::string>& args) {
    std::string out = std::string(op) + "(";
    for (std::size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i];
    return out + ")";
}

/// A uniform draw in [0, 1) from `rng` (53 bits, as torch's uniform_).
double uniform01(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

void bind_image_ops(py::module_& image) {
    image.def(
        "decode_image",
        [](const std::string& format, const std::optional<py_size>& resize,
           const std::optional<py_size>& reduce_to, const std::string& interp,
           bool apply_orientation, std::uint64_t max_pixels, bool strict,
           const std::optional<std::tuple<int, int, int, int>>& crop, double scale_slack, bool fast,
           bool check_rest) {
            ferry::decode_options o;
            std::vector<std::string> args;
            o.format = format_of(format);
            if (format != "rgb") args.push_back("format='" + format + "'");
            if (resize) {
                o.resize = image_size_of(*resize, "decode_image(resize=...)");
                args.push_back("resize=" + size_text(o.resize));
            }
            if (reduce_to) {
                o.reduce_to = image_size_of(*reduce_to, "decode_image(reduce_to=...)");
                args.push_back("reduce_to=" + size_text(o.reduce_to));
            }
            o.interp = interpolation_of(interp);
            if (interp != "bilinear") args.push_back("interp='" + interp + "'");
            o.apply_orientation = apply_orientation;
            o.max_pixels = max_pixels;
            o.strict = strict;
            if (crop) {
                const auto [x, y, w, h] = *crop;
                o.crop = ferry::crop_box{x, y, w, h};
                args.push_back("crop=(" + std::to_string(x) + ", " + std::to_string(y) + ", " +
                               std::to_string(w) + ", " + std::to_string(h) + ")");
            }
            o.scale_slack = scale_slack;
            o.fast = fast;
            o.check_rest = check_rest;
            return make(call_text("decode_image", args), [o](value&& v) {
                const ferry::bytes b = take_bytes(std::move(v), "decode_image");
                return value(ferry::ops::decode_image(b, o));
            });
        },
        py::kw_only(), py::arg("format") = "rgb", py::arg("resize") = py::none(),
        py::arg("reduce_to") = py::none(), py::arg("interp") = "bilinear",
        py::arg("apply_orientation") = true, py::arg("max_pixels") = 128'000'000ULL,
        py::arg("strict") = true, py::arg("crop") = py::none(), py::arg("scale_slack") = 0.0,
        py::arg("fast") = false, py::arg("check_rest") = false, R"doc(
A native op decoding JPEG, PNG, WebP or BMP bytes (ferry.Bytes from ops.read_file, or any
bytes-like object) to a ferry.Image. The keywords are ferry::decode_options': format ('rgb',
'bgr', 'gray', 'rgba'), resize and reduce_to ((height, width) or an int), interp ('nearest',
'bilinear', 'bicubic', 'area', 'lanczos', 'antialias': Pillow's BILINEAR resize), crop
((x, y, width, height) of the image as seen), apply_orientation, max_pixels, strict,
scale_slack, fast, check_rest.)doc");

    image.def(
        "decode_random_resized_crop",
        [](const py_size& size, double flip, std::pair<double, double> scale,
           std::pair<double, double> ratio, const std::string& interp, const std::string& format,
           std::uint64_t max_pixels, bool strict, double scale_slack, bool fast, bool check_rest) {
            const ferry::image_size out = image_size_of(size, "decode_random_resized_crop(size)");
            if (!(flip >= 0.0 && flip <= 1.0)) {
                throw ferry::invalid_argument(
                    "decode_random_resized_crop(flip=...): flip is a probability in [0, 1], got " +
                    std::to_string(flip));
            }
            ferry::decode_random_resized_crop_options o;
            o.scale = scale;
            o.ratio = ratio;
            o.interp = interpolation_of(interp);
            o.format = format_of(format);
            o.max_pixels = max_pixels;
            o.strict = strict;
            o.scale_slack = scale_slack;
            o.fast = fast;
            o.check_rest = check_rest;
            std::vector<std::string> args{size_text(out)};
            if (flip != 0.0)
                args.push_back("flip=" + py::repr(py::float_(flip)).cast<std::string>());
            if (interp != "bilinear") args.push_back("interp='" + interp + "'");
            return make(
                call_text("decode_random_resized_crop", args),
                [o, out, flip](value&& v) {
                    const ferry::bytes b = take_bytes(std::move(v), "decode_random_resized_crop");
                    static const ferry::item_info none{};
                    const ferry::item_info* info = ferry::detail::current_item();
                    std::mt19937_64 rng(ferry::item_rng(info != nullptr ? *info : none)());
                    ferry::image img =
                        ferry::ops::decode_random_resized_crop(b, out.width, out.height, rng, o);
                    // Drawn after the box, as torchvision's RandomHorizontalFlip follows
                    // RandomResizedCrop.
                    if (flip > 0.0 && uniform01(rng) < flip) {
                        img = ferry::ops::horizontal_flip(std::move(img));
                    }
                    return value(std::move(img));
                },
                /*wants_item=*/true);
        },
        py::arg("size"), py::kw_only(), py::arg("flip") = 0.0,
        py::arg("scale") = std::pair<double, double>{0.08, 1.0},
        py::arg("ratio") = std::pair<double, double>{3.0 / 4.0, 4.0 / 3.0},
        py::arg("interp") = "bilinear", py::arg("format") = "rgb",
        py::arg("max_pixels") = 128'000'000ULL, py::arg("strict") = true,
        py::arg("scale_slack") = 0.0, py::arg("fast") = false, py::arg("check_rest") = false,
        R"doc(
A native op: torchvision's RandomResizedCrop(size, scale, ratio) decoded in one step (only the
crop is decoded), then a horizontal flip with probability flip. The crop and the flip are drawn
from the item's seed (its sampling seed, epoch and dataset index: ferry's item_rng), so the same
item gets the same crop in the same epoch whatever the threads, and another in the next epoch.
size: an int or (height, width).)doc");

    image.def(
        "resize",
        [](const py_size& size, const std::string& interp) {
            const ferry::image_size out = image_size_of(size, "resize(size)");
            const ferry::interpolation i = interpolation_of(interp);
            std::vector<std::string> args{size_text(out)};
            if (interp != "bilinear") args.push_back("interp='" + interp + "'");
            return make(call_text("resize", args), [out, i](value&& v) {
                return value(ferry::ops::resize(take_image(std::move(v), "resize"), out.width,
                                                out.height, i));
            });
        },
        py::arg("size"), py::kw_only(), py::arg("interp") = "bilinear", R"doc(
A native op resizing a ferry.Image to size ((height, width) or an int) with interp ('bilinear'
by default; 'antialias' is Pillow's BILINEAR resize, pixel for pixel).)doc");

    image.attr("horizontal_flip") = make("horizontal_flip", [](value&& v) {
        return value(ferry::ops::horizontal_flip(take_image(std::move(v), "horizontal_flip")));
    });
    image.attr("to_tensor") = make("to_tensor", [](value&& v) {
        return value(ferry::ops::to_tensor(take_image(std::move(v), "to_tensor")));
    });
}

}  // namespace ferry::python
