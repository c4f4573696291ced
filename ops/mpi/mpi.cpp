// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::mpi on MPI's C API: the session, world(), agree_seed, all_gather and gather_states.
///
/// Every collective runs on its own duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN: the
/// program's messages and error handler on MPI_COMM_WORLD stay as they are (MPI's default there,
/// MPI_ERRORS_ARE_FATAL, would abort the job instead of letting us throw), and under
/// MPI_THREAD_MULTIPLE a collective of ours never interleaves with one the program runs on
/// MPI_COMM_WORLD from another thread. A duplicate costs one small collective; these calls are
/// made a few times per run, not per batch.
#include "ferry/mpi.hpp"

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "ferry/error.hpp"

namespace ferry::mpi {
namespace {

/// MPI's own words for an error code.
std::string describe(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
        return "MPI error " + std::to_string(code);
    }
    return std::string(text, static_cast<std::size_t>(length));
}

/// Throws for a failed MPI call: not transient, since MPI gives no sign that a retry can help
/// (a failed collective leaves the communicator unusable).
void throw_if_failed(int code, const char* where, const char* call) {
    if (code != MPI_SUCCESS) {
        throw error(errc::io,
                    std::string("ferry::mpi::") + where + ": " + call + ": " + describe(code),
                    false);
    }
}

void require_initialised(const char* where) {
    int initialised = 0;
    int finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    if (!initialised || finalised) {
        throw error(errc::invalid_argument, std::string("ferry::mpi::") + where + ": MPI is " +
                                                (finalised ? "finalised" : "not initialised") +
                                                " (make a ferry::mpi::session first, in main)");
    }
}

/// A private duplicate of MPI_COMM_WORLD that returns errors; freed when it goes.
class communicator {
  public:
    explicit communicator(const char* where) : where_(where) {
        require_initialised(where);
        // MPI_Comm_dup runs under MPI_COMM_WORLD's error handler, whatever the program set.
        throw_if_failed(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), where_, "MPI_Comm_dup");
        MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    }
    ~communicator() { MPI_Comm_free(&comm_); }
    communicator(const communicator&) = delete;
    communicator& operator=(const communicator&) = delete;

    [[nodiscard]] MPI_Comm get() const noexcept { return comm_; }
    void check(int code, const char* call) const { throw_if_failed(code, where_, call); }

  private:
    const char* where_;
    MPI_Comm comm_ = MPI_COMM_NULL;
};

void initialise(int* argc, char*** argv, bool& owns, bool& thread_multiple) {
    int initialised = 0;
    MPI_Initialized(&initialised);
    int provided = MPI_THREAD_SINGLE;
    if (initialised) {
        MPI_Query_thread(&provided);
    } else {
        throw_if_failed(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "session",
                        "MPI_Init_thread");
        owns = true;
    }
    thread_multiple = provided == MPI_THREAD_MULTIPLE;
}

}  // namespace

session::session() {
    initialise(nullptr, nullptr, owns_, thread_multiple_);
}

session::session(int& argc, char**& argv) {
    initialise(&argc, &argv, owns_, thread_multiple_);
}

session::~session() {
    if (!owns_) return;
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) MPI_Finalize();
}

::ferry::world world() {
    const communicator comm("world");
    int rank = 0;
    int size = 0;
    comm.check(MPI_Comm_rank(comm.get(), &rank), "MPI_Comm_rank");
    comm.check(MPI_Comm_size(comm.get(), &size), "MPI_Comm_size");
    MPI_Comm shared = MPI_COMM_NULL;
    comm.check(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared),
               "MPI_Comm_split_type");
    int local_rank = 0;
    int local_size = 0;
    const int rank_code = MPI_Comm_rank(shared, &local_rank);
    const int size_code = MPI_Comm_size(shared, &local_size);
    MPI_Comm_free(&shared);
    comm.check(rank_code, "MPI_Comm_rank (shared memory)");
    comm.check(size_code, "MPI_Comm_size (shared memory)");
    return {static_cast<std::size_t>(rank), static_cast<std::size_t>(size),
            static_cast<std::size_t>(local_rank), static_cast<std::size_t>(local_size)};
}

std::uint64_t agree_seed(std::uint64_t mine) {
    const communicator comm("agree_seed");
    comm.check(MPI_Bcast(&mine, 1, MPI_UINT64_T, 0, comm.get()), "MPI_Bcast");
    return mine;
}

std::vector<std::string> all_gather(const std::string& mine) {
    const communicator comm("all_gather");
    int size = 0;
    comm.check(MPI_Comm_size(comm.get(), &size), "MPI_Comm_size");
    // Lengths as 64-bit numbers, so that a rank whose string alone exceeds an int is told
    // apart on every rank and all of them throw together instead of some hanging.
    std::vector<std::uint64_t> lengths(static_cast<std::size_t>(size));
    const std::uint64_t my_length = mine.size();
    comm.check(
        MPI_Allgather(&my_length, 1, MPI_UINT64_T, lengths.data(), 1, MPI_UINT64_T, comm.get()),
        "MPI_Allgather");
    std::vector<int> counts(lengths.size());
    std::vector<int> offsets(lengths.size());
    std::uint64_t total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
        offsets[r] = static_cast<int>(total);
        total += lengths[r];
        if (total > static_cast<std::uint64_t>(INT_MAX)) {
            throw error(errc::invalid_argument,
                        "ferry::mpi::all_gather: the ranks' strings come to more than " +
                            std::to_string(INT_MAX) + " bytes (rank " + std::to_string(r) +
                            "'s is " + std::to_string(lengths[r]) + ")");
        }
        counts[r] = static_cast<int>(lengths[r]);
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    comm.check(MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(),
                              counts.data(), offsets.data(), MPI_CHAR, comm.get()),
               "MPI_Allgatherv");
    std::vector<std::string> out;
    out.reserve(lengths.size());
    for (std::size_t r = 0; r < lengths.size(); ++r) {
        out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), lengths[r]));
    }
    return out;
}

std::vector<pipeline_state> gather_states(const pipeline_state& mine) {
    const std::vector<std::string> texts = all_gather(mine.serialize());
    std::vector<pipeline_state> states;
    states.reserve(texts.size());
    for (const std::string& text : texts) states.push_back(pipeline_state::parse(text));
    return states;
}

}  // namespace ferry::mpi
