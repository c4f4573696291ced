// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::ops::http_client`: requests checked and built on the caller's thread (as `read_url`
/// builds them), then handed to the event loop (client_loop.hpp).

#include "ferry/http_client.hpp"

#include "client_loop.hpp"
#include "host_limits.hpp"
#include "request.hpp"

namespace ferry::ops {
namespace {

/// Where `fetch`'s future gets its result.
class promise_sink final : public ferry::detail::async_sink {
  public:
    std::promise<bytes> promise;

    void complete(ferry::detail::any_value&& v) noexcept override {
        try {
            promise.set_value(v.take_as<bytes>());
        } catch (...) {  // bad_alloc: the future still gets an answer
            fail(std::current_exception());
        }
    }
    void fail(std::exception_ptr e) noexcept override {
        try {
            promise.set_exception(std::move(e));
        } catch (...) {  // already satisfied
        }
    }
    void poll(std::function<bool(ferry::detail::any_value&)>) noexcept override {
        fail(std::make_exception_ptr(error(errc::internal, "http_client: no poll here")));
    }
};

void refuse_cache(const http_options& options) {
    if (options.cache != nullptr) {
        throw invalid_argument(
            "http_client: http_options::cache is not supported (read cached objects with "
            "read_url on I/O threads)");
    }
}

}  // namespace

class http_client::impl : public detail::client_loop {
  public:
    using client_loop::client_loop;
};

http_client::http_client(http_client_options options) {
    if (options.max_outstanding == 0) {
        throw invalid_argument("http_client: max_outstanding must be at least 1");
    }
    impl_ = std::make_unique<impl>(options);
}

http_client::~http_client() = default;

void http_client::fetch(std::string url, completion<bytes> done, http_options options) {
    refuse_cache(options);
    std::unique_ptr<detail::client_job> j;
    try {
        j = std::make_unique<detail::client_job>(detail::make_request(url), std::move(options),
                                                 done);
    } catch (...) {  // a URL that cannot be requested: its item's failure, as read_url's
        done.fail(std::current_exception());
        return;
    }
    if (j->options.adaptive) j->host = detail::host_of(j->req.url);
    impl_->submit(std::move(j));
}

std::future<bytes> http_client::fetch(std::string url, http_options options) {
    auto sink = std::make_shared<promise_sink>();
    std::future<bytes> result = sink->promise.get_future();
    fetch(std::move(url), completion<bytes>(std::move(sink)), std::move(options));
    return result;
}

http_client_reader http_client::reader(http_options options) {
    refuse_cache(options);
    return {*this, std::move(options)};
}

std::size_t http_client::outstanding() const noexcept {
    return impl_->running();
}

std::size_t http_client::queued() const noexcept {
    return impl_->waiting();
}

std::size_t http_client::retried() const noexcept {
    return impl_->retried();
}

}  // namespace ferry::ops
