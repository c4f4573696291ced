// SPDX-License-Identifier: Apache-2.0
/// \file
/// A tiny in-process HTTP/1.1 server for tests: 127.0.0.1 on an ephemeral port, a thread per
/// connection, keep-alive, and scripted misbehaviour (wrong Content-Length, a stall mid-body, a
/// close after the response, no answer at all, a body sent a byte at a time; `stop()` kills it
/// mid-run). GET only; no TLS. Not for anything but tests.
/// \code
///   ferry_test::http_server server([](const ferry_test::http_request& r) {
///       return ferry_test::http_response{.body = "hello " + r.target};
///   });
///   auto b = ferry::ops::read_url(server.url("/x"));
/// \endcode
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace ferry_test {

/// One request as the server parsed it.
struct http_request {
    std::string method;
    std::string target;                                        ///< e.g. "/a.jpg?x=1"
    std::vector<std::pair<std::string, std::string>> headers;  ///< names in lower case
    std::uint64_t connection = 0;  ///< which connection it came on (0-based, in accept order)
    std::uint64_t index = 0;       ///< server-wide request number (0-based)

    [[nodiscard]] std::string header(std::string_view name) const {
        for (const auto& [k, v] : headers) {
            if (k == name) return v;
        }
        return {};
    }
};

/// What the server sends back, and how it misbehaves.
struct http_response {
    int status = 200;
    std::string body{};
    std::vector<std::pair<std::string, std::string>> headers{};
    /// Content-Length to announce: -1 = the body's size; -2 = none (the body ends when the
    /// server closes the connection).
    std::int64_t content_length = -1;
    /// Send only this many bytes of the body (-1 = all of it).
    std::int64_t send_only = -1;
    /// After sending: keep the connection open for the next request, close it, reset it (a TCP
    /// RST, as a crashed peer's), or stall (send nothing more and wait until the client gives up
    /// or the server stops).
    enum class then : std::uint8_t { keep_alive, close, reset, stall } after = then::keep_alive;
    /// > 0: send the body one byte at a time, this long apart (a slow-drip server).
    std::chrono::milliseconds drip{0};
    /// Send nothing at all, not even the status line, and stall (a frozen server).
    bool frozen = false;
    /// The status line's reason phrase, sent as is (control characters too); empty: the usual.
    std::string reason{};
};

using http_handler = std::function<http_response(const http_request&)>;

/// The reason phrase of common statuses.
inline const char* reason_of(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 301:
            return "Moved Permanently";
        case 206:
            return "Partial Content";
        case 302:
            return "Found";
        case 307:
            return "Temporary Redirect";
        case 400:
            return "Bad Request";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 416:
            return "Range Not Satisfiable";
        case 500:
            return "Internal Server Error";
        case 503:
            return "Service Unavailable";
        default:
            return "Status";
    }
}

class http_server {
  public:
    /// Listens on 127.0.0.1 at an ephemeral port and serves every request with `handler`
    /// (called from the connection's thread; it must be thread-safe).
    explicit http_server(http_handler handler) : handler_(std::move(handler)) {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd_ < 0) throw std::runtime_error("http_server: socket failed");
        const int one = 1;
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            // Room for hundreds of connections opened at once (an event-loop client's burst).
            ::listen(listen_fd_, 1024) != 0) {
            ::close(listen_fd_);
            throw std::runtime_error(std::string("http_server: bind/listen failed: ") +
                                     std::strerror(errno));
        }
        socklen_t len = sizeof addr;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }

    http_server(const http_server&) = delete;
    http_server& operator=(const http_server&) = delete;
    ~http_server() { stop(); }

    /// Stops accepting, ends every connection (stalled ones included) and joins the threads.
    void stop() {
        if (stopping_.exchange(true)) return;
        if (acceptor_.joinable()) acceptor_.join();
        ::close(listen_fd_);
        std::list<std::thread> threads;
        {
            std::lock_guard lock(mutex_);
            threads = std::move(connections_);
        }
        for (auto& t : threads) t.join();
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// `http://127.0.0.1:PORT` + `path` (which starts with '/').
    [[nodiscard]] std::string url(std::string_view path) const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }
    /// Connections accepted so far.
    [[nodiscard]] std::uint64_t connections() const noexcept { return accepted_.load(); }
    /// Requests parsed so far.
    [[nodiscard]] std::uint64_t requests() const noexcept { return requests_.load(); }

    /// A handler serving the files under `root` (GET /relative/path; 404 otherwise).
    static http_handler serve_directory(std::filesystem::path root) {
        return [root = std::move(root)](const http_request& r) {
            std::string path = r.target.substr(0, r.target.find('?'));
            if (path.empty() || path[0] != '/' || path.find("..") != std::string::npos) {
                return http_response{.status = 400, .body = "bad path"};
            }
            std::ifstream in(root / path.substr(1), std::ios::binary);
            if (!in) return http_response{.status = 404, .body = "no such file: " + path};
            std::string body((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
            return http_response{.body = std::move(body)};
        };
    }

  private:
    // Every wait polls in slices of this, so that stop() is seen promptly.
    static constexpr int slice_ms = 50;

    void accept_loop() {
        while (!stopping_.load()) {
            pollfd p{listen_fd_, POLLIN, 0};
            if (::poll(&p, 1, slice_ms) <= 0) continue;
            const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            const std::uint64_t id = accepted_.fetch_add(1);
            std::lock_guard lock(mutex_);
            connections_.emplace_back([this, fd, id] {
                serve(fd, id);
                ::close(fd);
            });
        }
    }

    /// Waits for `events` on `fd`; false when the server stops or the socket fails.
    bool wait_for(int fd, short events) {
        while (!stopping_.load()) {
            pollfd p{fd, events, 0};
            const int n = ::poll(&p, 1, slice_ms);
            if (n < 0 && errno != EINTR) return false;
            if (n > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
        }
        return false;
    }

    /// Waits `d` unless the server stops first (then false).
    bool pause(std::chrono::milliseconds d) {
        const auto until = std::chrono::steady_clock::now() + d;
        while (!stopping_.load()) {
            const auto left = until - std::chrono::steady_clock::now();
            if (left <= std::chrono::steady_clock::duration::zero()) return true;
            std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
                left, std::chrono::milliseconds(slice_ms)));
        }
        return false;
    }

    /// Until the client gives up (closes: poll reports it readable, recv returns 0) or the
    /// server stops.
    void stall(int fd) {
        while (wait_for(fd, POLLIN)) {
            char c;
            if (::recv(fd, &c, 1, 0) <= 0) break;
        }
    }

    bool send_all(int fd, std::string_view data) {
        while (!data.empty()) {
            if (!wait_for(fd, POLLOUT)) return false;
            const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                return false;
            }
            data.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    void serve(int fd, std::uint64_t connection) {
        std::string buffer;
        char chunk[16 * 1024];
        for (;;) {
            std::size_t end;
            while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
                if (!wait_for(fd, POLLIN)) return;
                const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
                if (n <= 0) return;  // the client closed (or reset) the connection
                buffer.append(chunk, static_cast<std::size_t>(n));
            }
            http_request request = parse(buffer.substr(0, end));
            buffer.erase(0, end + 4);
            request.connection = connection;
            request.index = requests_.fetch_add(1);
            http_response response = handler_(request);
            if (!respond(fd, request, response)) return;
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
            std::transform(name.begin(), name.end(), name.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            std::string value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ') value.erase(0, 1);
            r.headers.emplace_back(std::move(name), std::move(value));
        }
        return r;
    }

    /// Sends the response; false when the connection is to end.
    bool respond(int fd, const http_request& request, const http_response& r) {
        if (r.frozen) {
            stall(fd);
            return false;
        }
        std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " +
                           (r.reason.empty() ? std::string(reason_of(r.status)) : r.reason) +
                           "\r\n";
        if (r.content_length != -2) {
            const auto length = r.content_length == -1 ? static_cast<std::int64_t>(r.body.size())
                                                       : r.content_length;
            head += "Content-Length: " + std::to_string(length) + "\r\n";
        }
        for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
        const bool closing = r.after == http_response::then::close || r.content_length == -2 ||
                             request.header("connection") == "close";
        if (closing) head += "Connection: close\r\n";
        head += "\r\n";
        std::string_view body = r.body;
        if (r.send_only >= 0) body = body.substr(0, static_cast<std::size_t>(r.send_only));
        if (!send_all(fd, head)) return false;
        if (r.drip.count() > 0) {
            for (std::size_t i = 0; i < body.size(); ++i) {
                if (!pause(r.drip) || !send_all(fd, body.substr(i, 1))) return false;
            }
        } else if (!send_all(fd, body)) {
            return false;
        }
        if (r.after == http_response::then::stall) {
            stall(fd);
            return false;
        }
        if (r.after == http_response::then::reset) {
            // Lingering 0 s: the close that follows sends a RST instead of a FIN.
            const linger now{1, 0};
            ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
            return false;
        }
        return !closing;
    }

    http_handler handler_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<std::uint64_t> accepted_{0};
    std::atomic<std::uint64_t> requests_{0};
    std::mutex mutex_;
    std::list<std::thread> connections_;
    std::thread acceptor_;
};

/// A server that keeps every request it answers (with `answer`), to check what reached it.
struct recording_server {
    std::mutex m;
    std::vector<http_request> seen;  ///< under `m`
    http_server server;
    explicit recording_server(http_handler answer)
        : server([this, answer = std::move(answer)](const http_request& r) {
              {
                  const std::lock_guard lock(m);
                  seen.push_back(r);
              }
              return answer(r);
          }) {}
    /// The requests so far.
    std::vector<http_request> requests() {
        const std::lock_guard lock(m);
        return seen;
    }
};

/// A port on 127.0.0.1 where nothing listens (bound, then released): connecting is refused.
inline std::uint16_t closed_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

}  // namespace ferry_test
