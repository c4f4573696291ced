// SPDX-License-Identifier: Apache-2.0
/// \file
/// The job's ranks over MPI: `ferry::mpi::session` (MPI_Init_thread / MPI_Finalize), this rank's
/// `world()`, a seed every rank agrees on, and gathering strings and pipeline states from every
/// rank (for one merged checkpoint). Link `ferry::mpi`; no MPI header is included here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ferry/export.hpp"
#include "ferry/pipeline_state.hpp"
#include "ferry/world.hpp"

/// MPI for a training job's ranks. Every function but `session`'s members is collective over
/// `MPI_COMM_WORLD`: every rank calls it, in the same order. Each works on a private duplicate of
/// `MPI_COMM_WORLD` (its messages never meet the program's own) and throws `ferry::error` (code
/// `errc::io`, not transient) with the MPI function's name and MPI's error string when an MPI
/// call fails, or `errc::invalid_argument` when MPI is not initialised (no `session` yet, or
/// after it ended).
/// \code
///   int main(int argc, char** argv) {
///       ferry::mpi::session mpi(argc, argv);
///       const ferry::world w = ferry::mpi::world();
///       auto pipe = ferry::from(files, ferry::sampling{.shuffle = true,
///                                                      .seed = ferry::mpi::agree_seed(now()),
///                                                      .rank = w.rank, .world_size = w.size})
///                       .map(load, 8).batch(32).build();
///       ...
///   }
/// \endcode
namespace ferry::mpi {

/// MPI for as long as it lives: the constructor calls `MPI_Init_thread` asking for
/// `MPI_THREAD_MULTIPLE` (ferry's and the program's threads may all call MPI), the destructor
/// `MPI_Finalize`. Where MPI is already initialised (by the program, or by another library), it
/// does neither: the code that initialised MPI finalises it. One per process, made in `main`
/// before any other MPI call; not copyable or movable.
/// \code
///   int main(int argc, char** argv) {
///       ferry::mpi::session mpi(argc, argv);
///       if (!mpi.thread_multiple()) std::cerr << "MPI calls from one thread at a time only\n";
///       train(ferry::mpi::world());
///   }   // MPI_Finalize
/// \endcode
class FERRY_API session {
  public:
    /// Initialises MPI without the command line (MPI 2 and later allow it).
    session();
    /// Initialises MPI with the program's command line, which the MPI library may read and edit
    /// (as `MPI_Init_thread(&argc, &argv, ...)`).
    session(int& argc, char**& argv);
    /// `MPI_Finalize`, when this session initialised MPI and nobody finalised it since. Every rank
    /// must get here (MPI_Finalize is collective); errors are ignored.
    ~session();
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    /// Whether this session initialised MPI (and so finalises it).
    [[nodiscard]] bool owns() const noexcept { return owns_; }
    /// Whether MPI runs with `MPI_THREAD_MULTIPLE`, i.e. any thread may call MPI at any time. MPI
    /// may provide less than asked (an Open MPI built without thread support); ferry's functions
    /// then must be called from the thread that made the session, one at a time.
    [[nodiscard]] bool thread_multiple() const noexcept { return thread_multiple_; }

  private:
    bool owns_ = false;
    bool thread_multiple_ = false;
};

/// This process's place in `MPI_COMM_WORLD`: `rank` and `size` from `MPI_Comm_rank` and
/// `MPI_Comm_size`; `local_rank` and `local_size` among the ranks that share its machine's memory
/// (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`), the usual choice of GPU. Unlike
/// `ferry::world::from_environment()`, it needs no launcher variables and is right under any
/// launcher that starts MPI processes. Collective.
/// \code
///   const ferry::world w = ferry::mpi::world();
///   cudaSetDevice(static_cast<int>(w.local_rank));
/// \endcode
[[nodiscard]] FERRY_API ::ferry::world world();

/// Rank 0's `mine`, on every rank (`MPI_Bcast`): for a shuffle seed that each rank would
/// otherwise draw for itself (from a clock, `std::random_device`), and on which
/// `ferry::sampling::seed` needs every rank to agree. Collective.
/// \code
///   const std::uint64_t seed = ferry::mpi::agree_seed(std::random_device{}());
///   ferry::sampling s{.shuffle = true, .seed = seed, .rank = w.rank, .world_size = w.size};
/// \endcode
[[nodiscard]] FERRY_API std::uint64_t agree_seed(std::uint64_t mine);

/// Every rank's `mine` (any length, also empty), on every rank: element `r` is rank `r`'s
/// (`MPI_Allgather` of the lengths, then `MPI_Allgatherv`). Collective. Throws
/// `ferry::invalid_argument` when the strings together exceed what MPI counts in an `int` (2 GiB).
/// \code
///   const auto hosts = ferry::mpi::all_gather(hostname());
///   if (w.rank == 0) for (const auto& h : hosts) std::cout << h << '\n';
/// \endcode
[[nodiscard]] FERRY_API std::vector<std::string> all_gather(const std::string& mine);

/// Every rank's pipeline state, on every rank, element `r` being rank `r`'s: `all_gather` of
/// `serialize()`, each read back with `pipeline_state::parse`. Rank 0 merges them into the
/// checkpoint, which a run at any world size resumes from. Collective; call it at the same
/// training step on every rank (states taken at the same step, after the same number of batches).
/// `pipeline_state`'s text form is ferry::core's: `ferry::mpi` does not link the engine.
/// \code
///   for (auto& batch : pipe) {
///       train_step(batch);
///       if (++step % 1000 == 0) {
///           const auto states = ferry::mpi::gather_states(pipe.state());
///           if (w.rank == 0)
///               write_file("loader.state", ferry::pipeline_state::merge(states).serialize());
///       }
///   }
///   // after a restart, at any world size:
///   auto pipe = ferry::from(files, ferry::sampling{.shuffle = true, .seed = seed,
///                                                  .rank = w.rank, .world_size = w.size})
///                   .map(load, 8).batch(32)
///                   .build({.resume_from = ferry::pipeline_state::parse(read_file(...))});
/// \endcode
[[nodiscard]] FERRY_API std::vector<pipeline_state> gather_states(const pipeline_state& mine);

}  // namespace ferry::mpi
