// SPDX-License-Identifier: Apache-2.0
/// \file
/// Starts a server process for a test or benchmark that the kernel stops (SIGTERM) when the
/// thread that started it ends, so that a run killed, crashed or timed out leaves no server
/// behind; the owner still stops it itself in the normal case.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

namespace ferry_test {

/// fork + exec of `binary` with `argv` (null-terminated; the environment is inherited), with
/// PR_SET_PDEATHSIG = SIGTERM, which posix_spawn cannot set. Between the fork and the exec only
/// system calls (async-signal-safe in a threaded process). Returns the child's pid, or -1 if
/// fork failed; an exec that fails shows as the child exiting with status 127.
inline pid_t spawn_tied(const char* binary, char* const argv[]) {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) ::_exit(127);  // the parent ended before the prctl
        ::execv(binary, argv);
        ::_exit(127);
    }
    return pid;
}

}  // namespace ferry_test
