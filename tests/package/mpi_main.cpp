// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of an installed ferry::mpi, started without mpirun (MPI's singleton: one rank of
/// one): a session, world(), agree_seed and all_gather, through
/// `find_package(ferry COMPONENTS mpi)` or `pkg-config ferry-mpi`. Links neither the engine nor
/// an MPI header of its own. Exits non-zero on any mismatch.

#include <cstdio>
#include <string>
#include <vector>

#include <ferry/mpi.hpp>

int main(int argc, char** argv) {
    ferry::mpi::session mpi(argc, argv);
    const ferry::world w = ferry::mpi::world();
    const bool world_ok = w == ferry::world{0, 1, 0, 1};
    const bool seed_ok = ferry::mpi::agree_seed(7) == 7;
    const bool gather_ok = ferry::mpi::all_gather("rank 0") == std::vector<std::string>{"rank 0"};
    std::printf("ferry::mpi: rank %zu of %zu, session owns MPI: %d, world %s, seed %s, gather %s\n",
                w.rank, w.size, mpi.owns() ? 1 : 0, world_ok ? "ok" : "WRONG",
                seed_ok ? "ok" : "WRONG", gather_ok ? "ok" : "WRONG");
    return mpi.owns() && world_ok && seed_ok && gather_ok ? 0 : 1;
}
