// SPDX-License-Identifier: Apache-2.0
/// \file
/// A tiny in-process HTTPS server for tests (OpenSSL's libssl): 127.0.0.1 on an ephemeral port,
/// a self-signed certificate made in memory at start (so clients turn `verify_tls` off), a thread
/// per connection, keep-alive, and every request kept to check what reached it. It answers with
/// `http_server.hpp`'s `http_response` (status, headers, body; none of its misbehaviour). Its
/// reason to exist: a request that carries a credential is redirected to https only, so where
/// credentials go on a redirect can only be seen over TLS. Not for anything but tests.
/// \code
///   ferry_test::tls_server server([](const ferry_test::http_request& r) {
///       return ferry_test::http_response{.body = "hello " + r.header("host")};
///   });
///   auto b = ferry::ops::read_url(server.url("/x"), {.verify_tls = false});
/// \endcode
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "../support/http_server.hpp"

namespace ferry_test {

class tls_server {
  public:
    /// Listens on 127.0.0.1 at an ephemeral port and serves every request with `handler` (called
    /// from the connection's thread; it must be thread-safe). Keeps every request it serves.
    explicit tls_server(http_handler handler) : handler_(std::move(handler)), ctx_(make_context()) {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd_ < 0) throw std::runtime_error("tls_server: socket failed");
        const int one = 1;
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(listen_fd_, 64) != 0) {
            ::close(listen_fd_);
            throw std::runtime_error(std::string("tls_server: bind/listen failed: ") +
                                     std::strerror(errno));
        }
        socklen_t len = sizeof addr;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }

    tls_server(const tls_server&) = delete;
    tls_server& operator=(const tls_server&) = delete;
    ~tls_server() { stop(); }

    /// Stops accepting, ends every connection and joins the threads.
    void stop() {
        if (stopping_.exchange(true)) return;
        if (acceptor_.joinable()) acceptor_.join();
        ::close(listen_fd_);
        std::list<std::thread> threads;
        {
            const std::lock_guard lock(mutex_);
            threads = std::move(connections_);
        }
        for (auto& t : threads) t.join();
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// `https://127.0.0.1:PORT` + `path` (which starts with '/').
    [[nodiscard]] std::string url(std::string_view path) const { return url_on("127.0.0.1", path); }
    /// `https://HOST:PORT` + `path`: the same server under another name (`localhost`), which is
    /// another origin to a client.
    [[nodiscard]] std::string url_on(std::string_view host, std::string_view path) const {
        return "https://" + std::string(host) + ":" + std::to_string(port_) + std::string(path);
    }
    /// The requests so far, in the order they were parsed.
    [[nodiscard]] std::vector<http_request> requests() {
        const std::lock_guard lock(mutex_);
        return seen_;
    }

  private:
    static constexpr int slice_ms = 50;

    struct ctx_free {
        void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
    };
    struct ssl_free {
        void operator()(SSL* s) const noexcept { SSL_free(s); }
    };

    /// A TLS context with a fresh P-256 key and a self-signed certificate for `localhost`.
    static std::unique_ptr<SSL_CTX, ctx_free> make_context() {
        std::unique_ptr<SSL_CTX, ctx_free> ctx(SSL_CTX_new(TLS_server_method()));
        EVP_PKEY_CTX* kctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr);
        EVP_PKEY* key = nullptr;
        X509* cert = X509_new();
        bool ok = ctx && kctx != nullptr && cert != nullptr && EVP_PKEY_keygen_init(kctx) > 0 &&
                  EVP_PKEY_CTX_set_ec_paramgen_curve_nid(kctx, NID_X9_62_prime256v1) > 0 &&
                  EVP_PKEY_keygen(kctx, &key) > 0;
        if (ok) {
            X509_set_version(cert, 2);
            ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
            X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
            X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
            X509_NAME* name = X509_get_subject_name(cert);
            ok = X509_set_pubkey(cert, key) == 1 &&
                 X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                            reinterpret_cast<const unsigned char*>("localhost"), -1,
                                            -1, 0) == 1 &&
                 X509_set_issuer_name(cert, name) == 1 && X509_sign(cert, key, EVP_sha256()) > 0 &&
                 SSL_CTX_use_certificate(ctx.get(), cert) == 1 &&
                 SSL_CTX_use_PrivateKey(ctx.get(), key) == 1;
        }
        X509_free(cert);
        EVP_PKEY_free(key);
        EVP_PKEY_CTX_free(kctx);
        if (!ok) throw std::runtime_error("tls_server: cannot make a certificate");
        return ctx;
    }

    void accept_loop() {
        while (!stopping_.load()) {
            pollfd p{listen_fd_, POLLIN, 0};
            if (::poll(&p, 1, slice_ms) <= 0) continue;
            const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) continue;
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            const std::lock_guard lock(mutex_);
            connections_.emplace_back([this, fd] {
                serve(fd);
                ::close(fd);
            });
        }
    }

    /// Runs `op` (an SSL call on the non-blocking socket `fd`) until it completes, waiting for
    /// the socket as it asks; its result, or <= 0 when it fails or the server stops.
    template <class Op>
    int complete(SSL* ssl, int fd, Op op) {
        while (!stopping_.load()) {
            const int n = op();
            if (n > 0) return n;
            const int why = SSL_get_error(ssl, n);
            short events = 0;
            if (why == SSL_ERROR_WANT_READ) {
                events = POLLIN;
            } else if (why == SSL_ERROR_WANT_WRITE) {
                events = POLLOUT;
            } else {
                return n;
            }
            pollfd p{fd, events, 0};
            if (::poll(&p, 1, slice_ms) < 0 && errno != EINTR) return -1;
        }
        return -1;
    }

    void serve(int fd) {
        const std::unique_ptr<SSL, ssl_free> ssl(SSL_new(ctx_.get()));
        if (!ssl || SSL_set_fd(ssl.get(), fd) != 1) return;
        if (complete(ssl.get(), fd, [&] { return SSL_accept(ssl.get()); }) <= 0) return;
        std::string buffer;
        char chunk[16 * 1024];
        for (;;) {
            std::size_t end;
            while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
                const int n = complete(ssl.get(), fd, [&] {
                    return SSL_read(ssl.get(), chunk, static_cast<int>(sizeof chunk));
                });
                if (n <= 0) return;  // the client closed the connection, or the server stops
                buffer.append(chunk, static_cast<std::size_t>(n));
            }
            http_request request = parse(buffer.substr(0, end));
            buffer.erase(0, end + 4);
            {
                const std::lock_guard lock(mutex_);
                request.index = seen_.size();
                seen_.push_back(request);
            }
            const http_response r = handler_(request);
            std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason_of(r.status) +
                              "\r\nContent-Length: " + std::to_string(r.body.size()) + "\r\n";
            for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
            out += "\r\n" + r.body;
            std::string_view left = out;
            while (!left.empty()) {
                const int n = complete(ssl.get(), fd, [&] {
                    return SSL_write(ssl.get(), left.data(), static_cast<int>(left.size()));
                });
                if (n <= 0) return;
                left.remove_prefix(static_cast<std::size_t>(n));
            }
        }
    }

    static http_request parse(const std::string& head) {
        http_request r;
        std::size_t line_end = head.find("\r\n");
        const std::string first = head.substr(0, line_end);
        const auto sp1 = first.find(' ');
        const auto sp2 = first.find(' ', sp1 + 1);
        r.method = first.substr(0, sp1);
        r.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
        while (line_end != std::string::npos) {
            const std::size_t start = line_end + 2;
            line_end = head.find("\r\n", start);
            const std::string line = head.substr(start, line_end - start);
            const auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string name = line.substr(0, colon);
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            std::string value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ') value.erase(0, 1);
            r.headers.emplace_back(std::move(name), std::move(value));
        }
        return r;
    }

    http_handler handler_;
    std::unique_ptr<SSL_CTX, ctx_free> ctx_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::vector<http_request> seen_;  // under mutex_
    std::list<std::thread> connections_;
    std::thread acceptor_;
};

}  // namespace ferry_test
