// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.http.Client`: `ferry::ops::http_client` (many requests outstanding on one event loop)
/// and its `reader(**options)`, a native asynchronous op for `map`.
#include <pybind11/stl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "convert.hpp"
#include "direct_call.hpp"
#include "ferry/error.hpp"
#include "ferry/http_client.hpp"
#include "io_ops.hpp"

namespace ferry::python {
namespace {

/// A client and the process that started its loop's thread. In a child forked since, that thread
/// is not there: a request would wait for ever, and destroying the client would join a thread
/// that does not exist. So the child refuses requests, and leaves the client as it is.
struct py_http_client {
    std::shared_ptr<ferry::ops::http_client> client;
    pid_t pid = ::getpid();
    std::size_t max_outstanding = 0;
    int attempts = 1;

    [[nodiscard]] ferry::ops::http_client& checked(const char* call) const {
        if (::getpid() != pid) {
            throw ferry::invalid_argument(
                std::string("http.Client.") + call +
                ": this process was forked after the client was made, and its loop's thread "
                "stayed in the parent; make a Client in this process (or start child processes "
                "with multiprocessing's 'spawn' or 'forkserver' method)");
        }
        return *client;
    }
};

/// Where `client.fetch()` waits for its one result: with the GIL released, looking for a signal
/// every 50 ms, so that Ctrl-C cancels the request (`stop_requested`, which the client's loop asks
/// every 50 ms) and raises KeyboardInterrupt once the request has ended.
class fetch_wait : public detail::async_sink {
  public:
    void complete(detail::any_value&& v) noexcept override {
        std::lock_guard lock(mutex_);
        result_ = std::move(v);
        done_ = true;
        changed_.notify_all();
    }
    void fail(std::exception_ptr error) noexcept override {
        std::lock_guard lock(mutex_);
        error_ = std::move(error);
        done_ = true;
        changed_.notify_all();
    }
    void poll(std::function<bool(detail::any_value&)>) noexcept override {
        fail(std::make_exception_ptr(
            ferry::error(ferry::errc::internal, "http.Client.fetch: a result by polling")));
    }
    [[nodiscard]] bool stop_requested() const noexcept override {
        return cancelled_.load(std::memory_order_relaxed);
    }

    /// The bytes, or what the request failed with; KeyboardInterrupt (or what a signal handler
    /// raised) after Ctrl-C. The caller holds the GIL.
    ferry::bytes wait() {
        wait_interruptibly(
            [this](std::chrono::milliseconds slice) {
                std::unique_lock lock(mutex_);
                return changed_.wait_for(lock, slice, [this] { return done_; });
            },
            [this] { cancelled_.store(true, std::memory_order_relaxed); });
        if (error_) std::rethrow_exception(error_);
        return result_.take_as<ferry::bytes>();
    }

  private:
    std::mutex mutex_;
    std::condition_variable changed_;
    bool done_ = false;
    detail::any_value result_;
    std::exception_ptr error_;
    std::atomic<bool> cancelled_{false};
};

/// The `http_options` of `read_url(**kwargs)` (read_url's keywords, checked as it checks them;
/// none: the defaults, without a call into Python), and how the op shows them ("(timeout=20.0)").
std::pair<std::shared_ptr<const ferry::http_options>, std::string> options_of(
    const py::kwargs& kwargs) {
    if (kwargs.empty()) return {std::make_shared<const ferry::http_options>(), "()"};
    const auto configured = py::module_::import("ferry._ferry.http")
                                .attr("_read_url_with")(**kwargs)
                                .cast<const py_read_url&>();
    const std::string& name = configured.op->name;  // "read_url(...)"
    return {configured.options, name.substr(name.find('('))};
}

/// `client.reader(**options)`: the op fetching each item's URL with `read_url`'s options.
py_async_op reader_of(const py_http_client& self, const py::kwargs& kwargs) {
    (void)self.checked("reader()");
    auto [options, args] = options_of(kwargs);
    if (options->cache != nullptr) {
        throw ferry::invalid_argument(
            "http.Client.reader(cache=...): the client does not read through a cache; use "
            "map(http.read_url(cache=...), executor='io') for cached reads");
    }
    std::string shown = "http.Client.reader" + args;
    std::shared_ptr<ferry::ops::http_client> client = self.client;
    const pid_t pid = self.pid;
    auto op = std::make_shared<const native_async_op>(native_async_op{
        std::move(shown),
        [client, options, pid](value&& in, std::shared_ptr<detail::async_sink> sink) {
            // The client's ferry::bytes, as the value Python stages hold.
            auto to = mapped_sink(std::move(sink), [](detail::any_value&& v) {
                return value(v.take_as<ferry::bytes>());
            });
            try {
                if (::getpid() != pid) {
                    throw ferry::invalid_argument(
                        "http.Client.reader: this process was forked after the client was made");
                }
                // The URL first: a completion made before a failure would fail the item as
                // "dropped" when it is destroyed, hiding the cause.
                std::string url = take_url(std::move(in));
                client->fetch(std::move(url), completion<ferry::bytes>(to), *options);
            } catch (...) {
                to->fail(std::current_exception());
            }
        }});
    return py_async_op{std::move(op)};
}

}  // namespace

void bind_http_client(py::module_& http) {
    py::class_<py_http_client>(http, "Client", R"doc(
An HTTP client on one event loop (ferry::ops::http_client): up to max_outstanding transfers at
once on the client's one thread, none blocking a thread per request. client.reader(**options)
is the op for map: map(client.reader(timeout=30), concurrency=256) keeps 256 requests
outstanding where read_url on I/O threads would need 256 threads. Each request means what
read_url's means (URL kinds, options, errors and their messages, per-host limits); retry: a
ferry.retry(...) the client applies to transient failures itself (its 'then' does not apply:
the stage's on_error does). A pipeline using a reader keeps the client alive.)doc")
        .def(py::init([](std::size_t max_outstanding, const std::optional<ferry::retry>& retry) {
                 if (max_outstanding == 0) {
                     throw ferry::invalid_argument(
                         "http.Client(max_outstanding=0): at least 1 transfer at once");
                 }
                 ferry::ops::http_client_options o;
                 o.max_outstanding = max_outstanding;
                 if (retry) o.retry = *retry;
                 py_http_client out;
                 out.max_outstanding = max_outstanding;
                 out.attempts = o.retry.attempts;
                 const pid_t pid = out.pid;
                 // Left, not destroyed, in a forked child (see py_http_client).
                 out.client = std::shared_ptr<ferry::ops::http_client>(
                     new ferry::ops::http_client(o), [pid](ferry::ops::http_client* c) {
                         if (::getpid() != pid) return;
                         if (PyGILState_Check() != 0) {
                             py::gil_scoped_release released;  // joins the loop's thread
                             delete c;
                         } else {
                             delete c;  // a pipeline's stage held the last reference
                         }
                     });
                 return out;
             }),
             py::kw_only(), py::arg("max_outstanding") = 256, py::arg("retry") = py::none())
        .def("reader", &reader_of, R"doc(
The native asynchronous op fetching each item's URL (a str) into ferry.Bytes with these
read_url options (keywords only: timeout, headers, range, max_bytes, ...; cache is refused):
map(client.reader(...), concurrency=n, on_error="skip").)doc")
        .def(
            "fetch",
            [](const py_http_client& self, const py::object& url, const py::kwargs& kwargs) {
                ferry::ops::http_client& client = self.checked("fetch()");
                const auto options = options_of(kwargs).first;
                std::string u = take_url(source_element(url));
                auto wait = std::make_shared<fetch_wait>();
                client.fetch(std::move(u), completion<ferry::bytes>(wait), *options);
                return to_python(value(wait->wait()));
            },
            py::arg("url"), R"doc(
Fetches one URL now on the client's loop (with read_url's keyword options) and returns its
ferry.Bytes, the GIL released while it waits; raises what read_url raises. Ctrl-C cancels the
request and raises KeyboardInterrupt once it has ended (within about 50 ms).)doc")
        .def_property_readonly(
            "outstanding", [](const py_http_client& self) { return self.client->outstanding(); },
            "Transfers running now.")
        .def_property_readonly(
            "queued", [](const py_http_client& self) { return self.client->queued(); },
            "Requests waiting: for a free transfer, for their host's limit, or for their next "
            "attempt.")
        .def_property_readonly(
            "retried", [](const py_http_client& self) { return self.client->retried(); },
            "Attempts made again after a transient failure, so far.")
        .def("__repr__", [](const py_http_client& self) {
            return "<ferry.http.Client: max_outstanding=" + std::to_string(self.max_outstanding) +
                   ", attempts=" + std::to_string(self.attempts) + ", " +
                   std::to_string(self.client->outstanding()) + " outstanding>";
        });
}

}  // namespace ferry::python
