// SPDX-License-Identifier: Apache-2.0
/// \file
/// A local nginx serving a folder on 127.0.0.1, for the HTTP benchmarks: a real, fast static
/// server (keep-alive, sendfile, ranges) in a process of its own, so that what the benchmark
/// measures is the client. Started in the constructor, stopped (SIGTERM, then SIGKILL) in the
/// destructor, and sent SIGTERM by the kernel if the thread that started it ends first (a
/// benchmark killed or interrupted leaves no server behind); `nginx-light` from Debian.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/tied_child.hpp"

namespace ferry_perf {

/// nginx serving `root` at `http://127.0.0.1:<port>/`, with `workers` worker processes.
class nginx_server {
  public:
    nginx_server(const std::filesystem::path& root, const std::filesystem::path& work,
                 int workers) {
        namespace fs = std::filesystem;
        const char* binary = nullptr;
        for (const char* p : {"/usr/sbin/nginx", "/usr/local/sbin/nginx"}) {
            if (fs::exists(p)) binary = p;
        }
        if (binary == nullptr) {
            throw std::runtime_error("nginx not found: apt-get install nginx-light");
        }
        fs::create_directories(work / "logs");
        port_ = free_port();
        const fs::path conf = work / "nginx.conf";
        std::ofstream(conf) << "worker_processes " << workers << ";\n"
                            << "daemon off;\npid " << (work / "nginx.pid").string() << ";\n"
                            << "error_log " << (work / "logs" / "error.log").string() << ";\n"
                            << "events { worker_connections 4096; }\n"
                            << "http {\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n"
                            << "  keepalive_requests 1000000;\n  keepalive_timeout 60;\n"
                            << "  client_body_temp_path " << (work / "tmp").string() << ";\n"
                            << "  server {\n    listen 127.0.0.1:" << port_ << ";\n"
                            << "    root " << fs::absolute(root).string() << ";\n  }\n}\n";
        fs::create_directories(work / "tmp");
        std::vector<std::string> args{binary, "-p", work.string(), "-c", conf.string()};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        // nginx runs with `daemon off`, so the master stays this process's child, and its
        // workers end with it.
        pid_ = ferry_test::spawn_tied(binary, argv.data());
        if (pid_ < 0) throw std::runtime_error("cannot start nginx: fork failed");
        // Ready once it accepts a connection (at most 10 s).
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!accepts()) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = 0;
                throw std::runtime_error("nginx exited at start; see " +
                                         (work / "logs" / "error.log").string());
            }
            if (std::chrono::steady_clock::now() > until) {
                throw std::runtime_error("nginx did not start listening within 10 s");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    nginx_server(const nginx_server&) = delete;
    nginx_server& operator=(const nginx_server&) = delete;
    ~nginx_server() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        for (int i = 0; i < 250; ++i) {  // 5 s for a clean exit
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }

    /// `http://127.0.0.1:<port>`
    [[nodiscard]] std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

  private:
    static int free_port() {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t n = sizeof a;
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) {
            throw std::runtime_error("no free port on 127.0.0.1");
        }
        ::close(fd);
        return ntohs(a.sin_port);
    }
    [[nodiscard]] bool accepts() const {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(port_));
        const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
        return ok;
    }

    int port_ = 0;
    pid_t pid_ = 0;
};

}  // namespace ferry_perf
