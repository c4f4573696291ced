// SPDX-License-Identifier: Apache-2.0
/// \file
/// Samples as values (shard_samples.hpp) and the ops on them: `field`, `fields`, `labelled`.
#include "shard_samples.hpp"

#include <charconv>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/detail/redact.hpp"
#include "ferry/error.hpp"
#include "ops.hpp"

namespace ferry::python {
namespace {

constexpr std::string_view key_name = "__key__";
constexpr std::string_view url_name = "__url__";
constexpr std::string_view damage_name = "__damage__";

value pair_of(std::string name, value v) {
    value_tuple t;
    t.items.reserve(2);
    t.items.emplace_back(std::move(name));
    t.items.push_back(std::move(v));
    return value(std::move(t));
}

/// A sample value's parts, read in place: its members are `items[0, members)`.
struct sample_parts {
    value_list* items = nullptr;
    std::size_t members = 0;
    const std::string* key = nullptr;
    const std::string* url = nullptr;
    const value_list* damage = nullptr;  ///< (code, message, path), or null
};

/// The pair at `v` as (name, value), or nulls when it is no (str, x) pair.
std::pair<const std::string*, value*> pair_at(value& v) {
    if (!v.holds<value_tuple>()) return {nullptr, nullptr};
    auto& t = v.as<value_tuple>().items;
    if (t.size() != 2 || !t[0].holds<std::string>()) return {nullptr, nullptr};
    return {&t[0].as<std::string>(), &t[1]};
}

/// The parts of `v` where it is a sample value (shard_samples.hpp's layout), else none.
bool parts_of(value& v, sample_parts& out) {
    if (!v.holds<value_tuple>()) return false;
    auto& items = v.as<value_tuple>().items;
    std::size_t end = items.size();
    if (end >= 3) {
        auto [name, x] = pair_at(items[end - 1]);
        if (name != nullptr && *name == damage_name && x->holds<value_tuple>()) {
            const auto& d = x->as<value_tuple>().items;
            if (d.size() != 3 || !d[0].holds<std::string>() || !d[1].holds<std::string>() ||
                !d[2].holds<std::string>()) {
                return false;
            }
            out.damage = &d;
            --end;
        }
    }
    if (end < 2) return false;
    auto [key, k] = pair_at(items[end - 2]);
    auto [url, u] = pair_at(items[end - 1]);
    if (key == nullptr || *key != key_name || !k->holds<std::string>() || url == nullptr ||
        *url != url_name || !u->holds<std::string>()) {
        return false;
    }
    out.key = &k->as<std::string>();
    out.url = &u->as<std::string>();
    for (std::size_t i = 0; i + 2 < end; ++i) {
        auto [ext, data] = pair_at(items[i]);
        if (ext == nullptr || !data->holds<ferry::bytes>()) return false;
    }
    out.items = &items;
    out.members = end - 2;
    return true;
}

sample_parts sample_of(value& v, std::string_view op) {
    sample_parts p;
    if (!parts_of(v, p)) {
        throw ferry::invalid_argument(
            std::string(op) + " expects a tar sample (from ferry.shards.tar_samples), got " +
            kind_of(v));
    }
    return p;
}

/// Throws a damaged sample's error as the C++ sample's `fields.at()` would, with its code and
/// message. Never transient: the value holds the damage, so a retry of the stage would find it
/// again.
[[noreturn]] void throw_damage(const value_list& d) {
    const std::string& code = d[0].as<std::string>();
    const std::string& message = d[1].as<std::string>();
    for (int c = 1; c <= static_cast<int>(ferry::errc::timeout); ++c) {
        const auto e = static_cast<ferry::errc>(c);
        if (code == ferry::to_string(e)) throw ferry::error(e, message, false);
    }
    throw ferry::error(ferry::errc::internal, message, false);
}

/// How messages name the sample, as `ferry::sample_fields::at` does.
std::string sample_label(const sample_parts& p) {
    return "tar_samples: shard '" +
           ferry::detail::escape_controls(ferry::detail::redact_url(*p.url)) + "', sample '" +
           ferry::detail::escape_controls(*p.key) + "'";
}

/// Member `ext`'s bytes, moved out of the sample; the sample's damage or a `decode_error` naming
/// the missing extension (and those the sample has), as `ferry::sample_fields::at` throws.
ferry::bytes take_member(sample_parts& p, std::string_view ext) {
    if (p.damage != nullptr) throw_damage(*p.damage);
    std::string have;
    for (std::size_t i = 0; i < p.members; ++i) {
        auto [name, data] = pair_at((*p.items)[i]);
        if (*name == ext) return std::move(data->as<ferry::bytes>());
        have += (have.empty() ? "" : ", ") + ferry::detail::escape_controls(*name);
    }
    throw ferry::decode_error(sample_label(p) + ": no member with extension '" +
                              ferry::detail::escape_controls(ext) +
                              "' (it has: " + (have.empty() ? "none" : have) + ")");
}

/// A label member's text as an int (ASCII decimal, white space around it allowed: WebDataset's
/// `.cls`).
std::int64_t label_of(const sample_parts& p, std::string_view ext, const ferry::bytes& b) {
    std::string_view text(reinterpret_cast<const char*>(b.data()), b.size());
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n' ||
                             text.front() == '\r')) {
        text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' ||
                             text.back() == '\r')) {
        text.remove_suffix(1);
    }
    std::int64_t label = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), label);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
        const std::string_view shown = text.substr(0, 40);
        throw ferry::decode_error(
            sample_label(p) + ": member '" + ferry::detail::escape_controls(ext) +
            "' is not an integer label: '" + ferry::detail::escape_controls(shown) +
            (text.size() > shown.size() ? "...'" : "'"));
    }
    return label;
}

py::object make_sample_op(std::string name, std::function<value(value&&)> fn) {
    return py::cast(
        py_op{std::make_shared<const native_op>(native_op{std::move(name), std::move(fn)})});
}

std::string repr_of(const std::string& s) {
    return py::repr(py::str(s)).cast<std::string>();
}

}  // namespace

value sample_value(ferry::sample&& s) {
    value_list items;
    items.reserve(s.fields.size() + 3);
    for (const auto& [ext, data] : s.fields) {
        // sample_fields gives const access only; the sample is ours and dropped right after, so
        // moving its members out (the map itself is not const) is defined and saves a copy of
        // every member's bytes.
        items.push_back(pair_of(ext, value(std::move(const_cast<ferry::bytes&>(data)))));
    }
    items.push_back(pair_of(std::string(key_name), value(std::move(s.key))));
    items.push_back(pair_of(std::string(url_name), value(std::move(s.shard))));
    if (s.damaged()) {
        std::string code = ferry::to_string(ferry::errc::internal);
        std::string message;
        try {
            std::rethrow_exception(s.fields.damage());
        } catch (const ferry::error& e) {
            code = ferry::to_string(e.code());
            message = e.what();
        } catch (const std::exception& e) {
            message = e.what();
        }
        value_tuple d;
        d.items.emplace_back(std::move(code));
        d.items.emplace_back(std::move(message));
        d.items.emplace_back(std::move(s.path));
        items.push_back(pair_of(std::string(damage_name), value(std::move(d))));
    }
    return value(value_tuple{std::move(items)});
}

std::string sample_path(value& v) {
    sample_parts p;
    if (!parts_of(v, p)) return {};
    if (p.damage != nullptr) return (*p.damage)[2].as<std::string>();
    return *p.url + "#" + *p.key;
}

void bind_sample_ops(py::module_& shards) {
    shards.def(
        "field",
        [](const std::string& ext) {
            return make_sample_op("field(" + repr_of(ext) + ")", [ext](value&& v) {
                sample_parts p = sample_of(v, "field");
                return value(take_member(p, ext));
            });
        },
        py::arg("ext"), R"doc(
A native op: a tar sample -> its member with extension ext (ferry.Bytes), e.g. field("jpg").
A damaged sample raises its error (the shard's damage: ferry.DecodeError, ferry.IOError); a
sample without that member is a ferry.DecodeError naming the shard, the key, the extension and
those it has.)doc");

    shards.def(
        "fields",
        [](const py::args& names) {
            std::vector<std::string> exts;
            for (const auto& n : names) exts.push_back(n.cast<std::string>());
            if (exts.empty()) {
                throw ferry::invalid_argument("fields(*exts): name at least one extension");
            }
            std::string name = "fields(";
            for (std::size_t i = 0; i < exts.size(); ++i) {
                name += (i ? ", " : "") + repr_of(exts[i]);
            }
            return make_sample_op(name + ")", [exts](value&& v) {
                sample_parts p = sample_of(v, "fields");
                value_list out;
                out.reserve(exts.size());
                for (const auto& e : exts) out.emplace_back(take_member(p, e));
                return value(std::move(out));
            });
        },
        R"doc(
A native op: a tar sample -> the list of its members with these extensions, in this order
(ferry.Bytes each), e.g. fields("jpg", "json"). Errors as field's.)doc");

    shards.def(
        "labelled",
        [](const std::string& ext, const std::string& label) {
            return make_sample_op("labelled(" + repr_of(ext) + ", label=" + repr_of(label) + ")",
                                  [ext, label](value&& v) {
                                      sample_parts p = sample_of(v, "labelled");
                                      ferry::bytes data = take_member(p, ext);
                                      const ferry::bytes text = take_member(p, label);
                                      value_list out;
                                      out.reserve(2);
                                      out.emplace_back(std::move(data));
                                      out.emplace_back(label_of(p, label, text));
                                      return value(std::move(out));
                                  });
        },
        py::arg("ext"), py::arg("label") = "cls", R"doc(
A native op: a tar sample -> the labelled item [member ext, label], the label the int written in
member label ('cls' by default, WebDataset's class member: ASCII digits). The image ops map the
member and keep the label, and ops.collate makes [data, labels] of a batch, as with
ferry.sources.image_folder. A label that is not an integer is a ferry.DecodeError naming it.)doc");
}

}  // namespace ferry::python
