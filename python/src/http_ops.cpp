// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.http`: `read_url` as a native op (and `read_url(**options)`, the op with
/// `ferry::http_options`), and `list_objects`, an S3 prefix's objects as a list of URLs.
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "convert.hpp"
#include "direct_call.hpp"
#include "ferry/cache.hpp"
#include "ferry/error.hpp"
#include "ferry/http.hpp"
#include "io_ops.hpp"

namespace ferry::python {
namespace {

/// Seconds as Python gives them (`what` names the keyword), as milliseconds; `zero_ok`: 0 means
/// "no limit" for this option.
std::chrono::milliseconds http_millis_of(double seconds, const char* what, bool zero_ok) {
    if (!std::isfinite(seconds) || seconds < 0.0 || (!zero_ok && seconds == 0.0)) {
        throw ferry::invalid_argument(std::string("read_url(") + what + "=...): " + what +
                                      " is a " + (zero_ok ? "" : "positive ") +
                                      "number of seconds" + (zero_ok ? " (0: no limit)" : "") +
                                      ", got " + std::to_string(seconds));
    }
    return ceil_millis(seconds);
}

/// Headers as Python gives them: a list of "Name: value" strings or a dict {name: value}.
using py_headers = std::variant<std::vector<std::string>, std::map<std::string, std::string>>;

/// A header's name: what messages and the op's name may show of it (never its value, which may be
/// a credential).
std::string header_name(const std::string& header) {
    return header.substr(0, header.find(':'));
}

/// `headers` as "Name: value" lines. A CR, LF or NUL in a header would let it end the request
/// line early (header injection): refused, naming the header but not showing its value.
std::vector<std::string> header_lines(const py_headers& headers) {
    std::vector<std::string> out;
    if (std::holds_alternative<std::vector<std::string>>(headers)) {
        out = std::get<std::vector<std::string>>(headers);
    } else {
        for (const auto& [name, v] : std::get<std::map<std::string, std::string>>(headers)) {
            if (name.empty() || name.find(':') != std::string::npos) {
                throw ferry::invalid_argument(
                    "read_url(headers=...): a header name is not empty and holds no ':', got '" +
                    name + "'");
            }
            out.push_back(name + ": " + v);
        }
    }
    for (const auto& h : out) {
        const auto colon = h.find(':');
        if (colon == 0 || colon == std::string::npos) {
            throw ferry::invalid_argument(
                "read_url(headers=...): each header is 'Name: value'; one has no name before a "
                "':'");
        }
        if (h.find_first_of(std::string("\r\n\0", 3)) != std::string::npos) {
            throw ferry::invalid_argument("read_url(headers=...): header '" + header_name(h) +
                                          "' holds a line break or a NUL (a header is one line)");
        }
    }
    return out;
}

/// The op reading URLs with `options`, shown as `name`.
py_read_url make_read_url(std::string name, ferry::http_options options) {
    auto held = std::make_shared<const ferry::http_options>(std::move(options));
    py_read_url out;
    out.op = std::make_shared<const native_op>(native_op{
        std::move(name),
        [held](value&& v) { return value(ferry::ops::read_url(take_url(std::move(v)), *held)); }});
    out.options = std::move(held);
    return out;
}

/// `read_url(**options)`: the op with these `http_options`; its name shows the options set, the
/// headers by name only.
py_read_url configured_read_url(
    double connect_timeout, double timeout, std::uint64_t low_speed_limit, double low_speed_time,
    std::uint64_t max_bytes, const std::optional<py_headers>& headers, bool follow_redirects,
    const std::optional<std::vector<std::string>>& credential_hosts, bool verify_tls,
    const std::optional<std::tuple<std::uint64_t, std::uint64_t>>& range, bool adaptive,
    const py::object& cache) {
    ferry::http_options o;
    std::vector<std::string> args;
    const auto number = [](double x) { return py::repr(py::float_(x)).cast<std::string>(); };
    o.connect_timeout = http_millis_of(connect_timeout, "connect_timeout", false);
    if (connect_timeout != 10.0) args.push_back("connect_timeout=" + number(connect_timeout));
    o.timeout = http_millis_of(timeout, "timeout", true);
    if (timeout != 0.0) args.push_back("timeout=" + number(timeout));
    o.low_speed_limit = low_speed_limit;
    if (low_speed_limit != 1024) {
        args.push_back("low_speed_limit=" + std::to_string(low_speed_limit));
    }
    // curl counts the low-speed time in whole seconds.
    o.low_speed_time = std::chrono::seconds(static_cast<std::int64_t>(
        std::ceil(http_millis_of(low_speed_time, "low_speed_time", true).count() / 1000.0)));
    if (low_speed_time != 30.0) args.push_back("low_speed_time=" + number(low_speed_time));
    o.max_bytes = max_bytes;
    if (max_bytes != (std::uint64_t{1} << 30)) {
        args.push_back("max_bytes=" + std::to_string(max_bytes));
    }
    if (headers) {
        o.headers = header_lines(*headers);
        std::string names;
        for (const auto& h : o.headers) {
            names += (names.empty() ? "'" : ", '") + header_name(h) + "'";
        }
        args.push_back("headers=[" + names + "]");
    }
    o.follow_redirects = follow_redirects;
    if (!follow_redirects) args.push_back("follow_redirects=False");
    if (credential_hosts) {
        o.credential_hosts = *credential_hosts;
        std::string hosts;
        for (const auto& h : o.credential_hosts) hosts += (hosts.empty() ? "'" : ", '") + h + "'";
        args.push_back("credential_hosts=[" + hosts + "]");
    }
    o.verify_tls = verify_tls;
    if (!verify_tls) args.push_back("verify_tls=False");
    if (range) {
        const auto [offset, length] = *range;
        o.range = ferry::byte_range{.offset = offset, .length = length};
        args.push_back("range=(" + std::to_string(offset) + ", " + std::to_string(length) + ")");
    }
    o.adaptive = adaptive;
    if (!adaptive) args.push_back("adaptive=False");
    if (!cache.is_none()) {
        if (!py::isinstance<ferry::object_cache>(cache)) {
            throw py::type_error(
                std::string("read_url(cache=...): cache is a ferry.http.Cache (from "
                            "ferry.http.open_cache), got a Python ") +
                Py_TYPE(cache.ptr())->tp_name);
        }
        o.cache = cache.cast<std::shared_ptr<ferry::object_cache>>();
        args.push_back("cache=" + py::repr(cache).cast<std::string>());
    }
    std::string name = "read_url(";
    for (std::size_t i = 0; i < args.size(); ++i) name += (i ? ", " : "") + args[i];
    return make_read_url(name + ")", std::move(o));
}

}  // namespace

std::string take_url(value&& v) {
    if (v.holds<std::string>()) return std::move(v.as<std::string>());
    if (v.holds<py_ref>()) {
        gil_hold gil;
        if (PyUnicode_Check(v.as<py_ref>().get()) != 0) {
            return source_element(v.as<py_ref>().get()).as<std::string>();
        }
    }
    throw ferry::invalid_argument("read_url expects a URL (str), got " + kind_of(v));
}

void bind_http_ops(py::module_& http) {
    py::class_<py_read_url, py_op>(http, "ReadUrl", R"doc(
The native op read_url (ferry::ops::read_url) with its http options: map(op) fetches each item,
a URL (str), into ferry.Bytes, without the GIL. op(url) fetches one URL now; op(**options), with
keywords only, is a new op with those options (each call starts from the defaults).)doc")
        .def(
            "__call__",
            [](const py_read_url& self, const py::args& args, const py::kwargs& kwargs) {
                // One function rather than two overloads: pybind11 converts an int to a float
                // only for positional arguments of an overloaded function, so read_url(timeout=20)
                // would be refused. Options go to the (not overloaded) _read_url_with.
                if (args.empty()) {
                    return py::module_::import("ferry._ferry.http")
                        .attr("_read_url_with")(**kwargs);
                }
                if (args.size() != 1 || !kwargs.empty()) {
                    throw py::type_error(
                        "read_url(url) fetches one URL; read_url(**options), with keywords only, "
                        "makes the op with those options");
                }
                return to_python(
                    call_interruptibly([op = self.op, in = source_element(args[0])]() mutable {
                        return op->fn(std::move(in));
                    }));
            },
            R"doc(
op(url) fetches one URL now (ferry.Bytes), the GIL released; on the main thread Ctrl-C cancels
the request within about 50 ms and raises KeyboardInterrupt. op(**options), with keywords only,
is the op with these ferry::http_options (each call starts from the defaults; seconds for times):
connect_timeout (10), timeout (0: no limit for the whole transfer), low_speed_limit (bytes/s)
and low_speed_time (s): a transfer slower than 1024 B/s for 30 s fails (transient); max_bytes
(1 GiB; 0: no limit); headers (a dict or a list of 'Name: value'); follow_redirects;
credential_hosts (hosts a redirect may take the request's credentials to); verify_tls; range
((offset, length): those bytes; length 0: to the end); adaptive (per-host AIMD on 429/503);
cache (a ferry.http.Cache from open_cache: http(s):// and s3:// objects are read through it).
Retries are the stage's: map(op, on_error=ferry.retry(3, then="skip"), executor="io").)doc");

    http.def("_read_url_with", &configured_read_url, py::kw_only(),
             py::arg("connect_timeout") = 10.0, py::arg("timeout") = 0.0,
             py::arg("low_speed_limit") = 1024, py::arg("low_speed_time") = 30.0,
             py::arg("max_bytes") = std::uint64_t{1} << 30, py::arg("headers") = py::none(),
             py::arg("follow_redirects") = true, py::arg("credential_hosts") = py::none(),
             py::arg("verify_tls") = true, py::arg("range") = py::none(),
             py::arg("adaptive") = true, py::arg("cache") = py::none(),
             "read_url(**options)'s work (see ReadUrl.__call__).");

    http.attr("read_url") = py::cast(make_read_url("read_url", {}));

    py::class_<ferry::ops::http_host>(http, "Host", R"doc(
One host's requests as read_url and http.Client adapt to it (ferry::ops::http_host): host
('scheme://host[:port]'), limit (calls allowed in flight; 0: no limit yet, never throttled),
in_flight (now), requests (so far) and throttled (answers that were 429 or 503).)doc")
        .def_readonly("host", &ferry::ops::http_host::host)
        .def_readonly("limit", &ferry::ops::http_host::limit)
        .def_readonly("in_flight", &ferry::ops::http_host::in_flight)
        .def_readonly("requests", &ferry::ops::http_host::requests)
        .def_readonly("throttled", &ferry::ops::http_host::throttled)
        .def("__repr__", [](const ferry::ops::http_host& h) {
            return "Host(" + py::repr(py::str(h.host)).cast<std::string>() +
                   ", limit=" + std::to_string(h.limit) +
                   ", in_flight=" + std::to_string(h.in_flight) +
                   ", requests=" + std::to_string(h.requests) +
                   ", throttled=" + std::to_string(h.throttled) + ")";
        });
    http.def("hosts", &ferry::ops::http_hosts, R"doc(
Every host read_url or an http.Client has called with adaptive=True (the default), and how it
stands (a list of http.Host): to see which store throttles, and how far ferry has backed off.)doc");

    http.def(
        "list_objects",
        [](const std::string& url, std::size_t page_size, std::uint64_t max_keys,
           std::uint64_t max_pages, std::uint64_t max_bytes, const py::object& http_op) {
            ferry::sources::list_options o;
            o.page_size = page_size;
            o.max_keys = max_keys;
            o.max_pages = max_pages;
            o.max_bytes = max_bytes;
            if (!http_op.is_none()) {
                if (!py::isinstance<py_read_url>(http_op)) {
                    throw py::type_error(
                        std::string("list_objects(http=...): http is ferry.http.read_url or "
                                    "read_url(**options), got a Python ") +
                        Py_TYPE(http_op.ptr())->tp_name);
                }
                o.http = *http_op.cast<const py_read_url&>().options;
            }
            std::vector<std::string> urls;
            {
                py::gil_scoped_release released;  // one request per page
                urls = ferry::sources::list_objects(url, o);
            }
            return to_python_strs(std::move(urls));
        },
        py::arg("url"), py::kw_only(), py::arg("page_size") = 1000,
        py::arg("max_keys") = 100'000'000ULL, py::arg("max_pages") = 1'000'000ULL,
        py::arg("max_bytes") = std::uint64_t{4} << 30, py::arg("http") = py::none(), R"doc(
Every object under an S3 prefix as s3://bucket/key URLs (str), in S3's order
(ferry::sources::list_objects, ListObjectsV2 page after page; keys ending in '/' left out).
ferry.source(urls) visits them natively; .map(ferry.http.read_url) reads them. The environment
is read_url's (AWS_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, the AWS_* credentials or
AWS_PROFILE). page_size (1 to 1000), max_keys, max_pages and max_bytes bound the listing
(passing one is a ferry.IOError naming it); http: a read_url op whose options the requests use.
Raises ferry.IOError for a failed page or a store that misbehaves, ferry.InvalidArgument for a URL
that is not s3:// or a bucket name S3 does not allow.)doc");
}

}  // namespace ferry::python
