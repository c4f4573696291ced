// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::world`: this process's rank among the processes of a training job, read from what the
/// launcher (torchrun, Slurm, Open MPI, MPICH) put in the environment.
#pragma once

#include <cstddef>

#include "ferry/export.hpp"

namespace ferry {

/// Where this process stands in a training job: its rank among all processes and among those on
/// its machine (the usual choice of GPU). The types match `ferry::sampling`'s, so the fields pass
/// straight to it:
/// \code
///   const auto w = ferry::world::from_environment();
///   auto pipe = ferry::from(files, ferry::sampling{.shuffle = true, .seed = 42,
///                                                  .rank = w.rank, .world_size = w.size});
///   cudaSetDevice(static_cast<int>(w.local_rank));
/// \endcode
struct FERRY_API world {
    std::size_t rank = 0;        ///< this process, among all: below `size`
    std::size_t size = 1;        ///< how many processes the job has
    std::size_t local_rank = 0;  ///< this process, among those on its machine
    std::size_t local_size = 1;  ///< how many processes run on this machine

    /// Reads the launcher's variables. The first launcher found, in this order, decides:
    ///
    /// | launcher | rank, size | local rank, local size |
    /// |---|---|---|
    /// | torchrun | `RANK`, `WORLD_SIZE` | `LOCAL_RANK`, `LOCAL_WORLD_SIZE` |
    /// | Open MPI (`mpirun`) | `OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE` |
    /// `OMPI_COMM_WORLD_LOCAL_RANK`, `OMPI_COMM_WORLD_LOCAL_SIZE` | | MPICH (Hydra, PMI) |
    /// `PMI_RANK`, `PMI_SIZE` | `MPI_LOCALRANKID`, `MPI_LOCALNRANKS` | | Slurm (`srun`) |
    /// `SLURM_PROCID`, `SLURM_NTASKS` | `SLURM_LOCALID`; `SLURM_NTASKS_PER_NODE`, else this node's
    /// entry of `SLURM_TASKS_PER_NODE` (e.g. `4(x2),2`, by `SLURM_NODEID`) |
    ///
    /// None set: rank 0 of 1. The order puts the launcher that starts the training processes
    /// before the ones that may wrap it, and their variables legitimately differ: under
    /// `srun torchrun ...`, `SLURM_PROCID` numbers the machines and `RANK` the processes;
    /// `mpirun` inside a Slurm allocation leaves the allocation's `SLURM_*` behind. Only the
    /// deciding launcher's variables are read (a stale one of another launcher is no error).
    ///
    /// Where the launcher says nothing about machines (no local variables), ferry assumes one
    /// machine: `local_rank = rank`, `local_size = size`.
    ///
    /// Throws `ferry::invalid_argument`, naming the variable and its value, when a value is not a
    /// decimal number, a size is 0, a rank is not below its size, a local size exceeds the size,
    /// or only one of a rank/size pair is set.
    [[nodiscard]] static world from_environment();

    /// Member-wise equality.
    friend bool operator==(const world&, const world&) = default;
};

}  // namespace ferry
