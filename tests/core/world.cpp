// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::world::from_environment() under each launcher's variables (torchrun, Open MPI, MPICH,
/// Slurm), their precedence, and the malformed and contradictory settings it rejects.
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <ferry/world.hpp>
#include <map>
#include <optional>
#include <ostream>
#include <string>

#include "../support/ops_support.hpp"

using ops_test::expect_throw;

namespace ferry {
inline std::ostream& boost_test_print_type(std::ostream& os, const world& w) {
    return os << "{rank " << w.rank << ", size " << w.size << ", local_rank " << w.local_rank
              << ", local_size " << w.local_size << "}";
}
}  // namespace ferry

namespace world_test {

/// Every variable from_environment() reads: cleared for a case, restored after it.
const char* const variables[] = {
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
    "SLURM_NODEID",
};

/// A fixture: the launchers' variables unset for the case (a test itself may run under one),
/// put back as they were afterwards.
class clean_environment {
  public:
    clean_environment() {
        for (const char* v : variables) {
            if (const char* value = std::getenv(v)) saved_[v] = value;
            ::unsetenv(v);
        }
    }
    ~clean_environment() {
        for (const char* v : variables) {
            const auto it = saved_.find(v);
            if (it == saved_.end()) {
                ::unsetenv(v);
            } else {
                ::setenv(v, it->second.c_str(), 1);
            }
        }
    }
    clean_environment(const clean_environment&) = delete;
    clean_environment& operator=(const clean_environment&) = delete;

    static void set(const std::map<std::string, std::string>& values) {
        for (const auto& [k, v] : values) ::setenv(k.c_str(), v.c_str(), 1);
    }

  private:
    std::map<std::string, std::string> saved_;
};

/// from_environment() with `values` set (on top of what the case set before).
ferry::world with(const std::map<std::string, std::string>& values) {
    clean_environment::set(values);
    return ferry::world::from_environment();
}

/// The message from_environment() throws with `values` set alone.
std::string error_with(const std::map<std::string, std::string>& values) {
    clean_environment scope;
    clean_environment::set(values);
    return expect_throw<ferry::invalid_argument>([] { (void)ferry::world::from_environment(); })
        .what();
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace world_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_FIXTURE_TEST_SUITE(world, world_test::clean_environment)
using namespace world_test;

// No launcher: rank 0 of 1, on one machine.
BOOST_AUTO_TEST_CASE(no_launcher_is_rank_0_of_1) {
    BOOST_TEST(ferry::world::from_environment() == (ferry::world{0, 1, 0, 1}));
}

// torchrun's four variables.
BOOST_AUTO_TEST_CASE(reads_torchrun) {
    BOOST_TEST(
        with(
            {{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}}) ==
        (ferry::world{5, 8, 1, 4}));
}

// Open MPI's mpirun.
BOOST_AUTO_TEST_CASE(reads_open_mpi) {
    BOOST_TEST(with({{"OMPI_COMM_WORLD_RANK", "3"},
                     {"OMPI_COMM_WORLD_SIZE", "4"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}) == (ferry::world{3, 4, 1, 2}));
}

// MPICH: PMI_RANK/PMI_SIZE, with Hydra's local variables or without them (one machine assumed).
BOOST_AUTO_TEST_CASE(reads_mpich) {
    BOOST_TEST(with({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}}) == (ferry::world{2, 3, 2, 3}));
    BOOST_TEST(with({{"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "1"}}) ==
               (ferry::world{2, 3, 0, 1}));
}

// Slurm: the local size from SLURM_NTASKS_PER_NODE, else this node's entry of
// SLURM_TASKS_PER_NODE (with repeats), else one machine.
BOOST_AUTO_TEST_CASE(reads_slurm) {
    BOOST_TEST(with({{"SLURM_PROCID", "6"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "2"},
                     {"SLURM_NTASKS_PER_NODE", "4"}}) == (ferry::world{6, 8, 2, 4}));
    ::unsetenv("SLURM_NTASKS_PER_NODE");
    BOOST_TEST(with({{"SLURM_NTASKS", "10"},
                     {"SLURM_PROCID", "9"},
                     {"SLURM_LOCALID", "1"},
                     {"SLURM_TASKS_PER_NODE", "4(x2),2"},
                     {"SLURM_NODEID", "2"}}) == (ferry::world{9, 10, 1, 2}));
    BOOST_TEST(with({{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "1"}}) ==
               (ferry::world{5, 10, 1, 4}));
    ::unsetenv("SLURM_TASKS_PER_NODE");
    BOOST_TEST(with({}) == (ferry::world{5, 10, 1, 10}));
}

// The launcher that starts the processes wins over one that wraps it: srun torchrun (Slurm
// numbers the machines, torchrun the processes), mpirun inside a Slurm allocation; Open MPI
// comes before MPICH.
BOOST_AUTO_TEST_CASE(precedence_is_torchrun_open_mpi_mpich_slurm) {
    clean_environment::set({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}});
    BOOST_TEST(with({{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}}) == (ferry::world{3, 4, 3, 4}));
    BOOST_TEST(with({{"OMPI_COMM_WORLD_RANK", "6"}, {"OMPI_COMM_WORLD_SIZE", "7"}}) ==
               (ferry::world{6, 7, 6, 7}));
    BOOST_TEST(with({{"RANK", "12"},
                     {"WORLD_SIZE", "16"},
                     {"LOCAL_RANK", "4"},
                     {"LOCAL_WORLD_SIZE", "8"}}) == (ferry::world{12, 16, 4, 8}));
}

// A value that is not a whole decimal number is rejected, naming the variable and the value.
BOOST_AUTO_TEST_CASE(malformed_values_are_rejected_naming_the_variable) {
    for (const char* bad :
         {"", "x", "-1", "+1", " 1", "1 ", "1.0", "0x10", "99999999999999999999"}) {
        BOOST_TEST_CONTEXT("WORLD_SIZE='" << bad << "'") {
            const auto e = error_with({{"RANK", "0"}, {"WORLD_SIZE", bad}});
            BOOST_TEST(contains(e, "WORLD_SIZE='" + std::string(bad) + "'"), e);
            BOOST_TEST(contains(e, "not a decimal number"), e);
        }
    }
    BOOST_TEST(contains(error_with({{"SLURM_PROCID", "0"},
                                    {"SLURM_NTASKS", "2"},
                                    {"SLURM_LOCALID", "0"},
                                    {"SLURM_TASKS_PER_NODE", "2(3)"}}),
                        "SLURM_TASKS_PER_NODE='2(3)'"));
}

// Settings that contradict themselves: a rank not below its size, a size of 0, half of a pair, a
// local rank not below the local size, a local size above the size.
BOOST_AUTO_TEST_CASE(contradictory_settings_are_rejected_naming_the_variables) {
    const auto rank = error_with({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
    BOOST_TEST(contains(rank, "RANK='4' is not below WORLD_SIZE='4'"), rank);
    const auto zero = error_with({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}});
    BOOST_TEST(contains(zero, "OMPI_COMM_WORLD_SIZE='0'"), zero);
    const auto half = error_with({{"PMI_RANK", "1"}});
    BOOST_TEST(contains(half, "PMI_RANK='1' is set but PMI_SIZE is not"), half);
    const auto other_half = error_with({{"SLURM_NTASKS", "4"}});
    BOOST_TEST(contains(other_half, "SLURM_NTASKS='4' is set but SLURM_PROCID is not"), other_half);
    const auto local = error_with(
        {{"RANK", "1"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "4"}, {"LOCAL_WORLD_SIZE", "4"}});
    BOOST_TEST(contains(local, "LOCAL_RANK='4' is not below LOCAL_WORLD_SIZE='4'"), local);
    const auto wide = error_with(
        {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}});
    BOOST_TEST(contains(wide, "LOCAL_WORLD_SIZE='4' is not between 1 and WORLD_SIZE='2'"), wide);
    const auto no_local_rank =
        error_with({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
    BOOST_TEST(contains(no_local_rank, "LOCAL_WORLD_SIZE='2' is set but LOCAL_RANK is not"),
               no_local_rank);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
