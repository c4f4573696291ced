// SPDX-License-Identifier: Apache-2.0
/// \file
/// A test-only HTTP server for ferry-probe's ctest checks: serves a folder on 127.0.0.1 at an
/// ephemeral port, writes a list file with the port filled in, runs a command, and exits with
/// the command's status. It owns the command's lifetime, so a check can never leave a server
/// behind or hang: past `--limit` seconds it kills the command and exits 124.
///
///   http_fixture_server ROOT LIST_TEMPLATE LIST_OUT [--limit SECONDS] -- COMMAND [ARGS...]
///
/// Every `{port}` in LIST_TEMPLATE becomes the port. On exit it prints to stderr how many
/// requests it served over how many connections.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "support/http_server.hpp"

extern char** environ;

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    int limit_s = 60;
    std::vector<std::string> positional;
    std::vector<char*> command;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--") {
            for (std::size_t k = i + 1; k < args.size(); ++k) command.push_back(argv[k + 1]);
            break;
        }
        if (args[i] == "--limit" && i + 1 < args.size()) {
            limit_s = std::atoi(args[++i].c_str());
        } else {
            positional.push_back(args[i]);
        }
    }
    if (positional.size() != 3 || command.empty() || limit_s <= 0) {
        std::fprintf(stderr,
                     "usage: http_fixture_server ROOT LIST_TEMPLATE LIST_OUT [--limit SECONDS] "
                     "-- COMMAND [ARGS...]\n");
        return 2;
    }
    command.push_back(nullptr);

    ferry_test::http_server server(ferry_test::http_server::serve_directory(positional[0]));
    {
        std::ifstream in(positional[1]);
        if (!in) {
            std::fprintf(stderr, "http_fixture_server: cannot read %s\n", positional[1].c_str());
            return 2;
        }
        std::string list((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const std::string port = std::to_string(server.port());
        for (std::size_t at; (at = list.find("{port}")) != std::string::npos;) {
            list.replace(at, 6, port);
        }
        std::ofstream out(positional[2]);
        out << list;
        if (!out.flush()) {
            std::fprintf(stderr, "http_fixture_server: cannot write %s\n", positional[2].c_str());
            return 2;
        }
    }

    pid_t child = 0;
    if (::posix_spawnp(&child, command[0], nullptr, nullptr, command.data(), environ) != 0) {
        std::fprintf(stderr, "http_fixture_server: cannot run %s\n", command[0]);
        return 2;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
    int status = 0;
    int rc = 124;
    for (;;) {
        const pid_t done = ::waitpid(child, &status, WNOHANG);
        if (done == child) {
            rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            std::fprintf(stderr, "http_fixture_server: %s still running after %d s: killed\n",
                         command[0], limit_s);
            ::kill(child, SIGKILL);
            ::waitpid(child, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    server.stop();
    std::fprintf(stderr, "http_fixture_server: served %llu requests over %llu connections\n",
                 static_cast<unsigned long long>(server.requests()),
                 static_cast<unsigned long long>(server.connections()));
    return rc;
}
