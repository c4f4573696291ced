// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::world::from_environment()`: the launchers' variables, strictly parsed and checked.

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/world.hpp"

namespace ferry {
namespace {

constexpr std::string_view where = "ferry::world::from_environment(): ";

[[noreturn]] void fail(const std::string& why) {
    throw invalid_argument(std::string(where) + why);
}

std::optional<std::string_view> variable(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string_view(v);
}

std::string setting(const char* name, std::string_view value) {
    return std::string(name) + "='" + std::string(value) + "'";
}

/// A whole decimal number, nothing else (no sign, no blanks, no suffix).
std::optional<std::size_t> parse_number(std::string_view s) {
    std::size_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

std::optional<std::size_t> number(const char* name) {
    const auto v = variable(name);
    if (!v) return std::nullopt;
    const auto n = parse_number(*v);
    if (!n) fail(setting(name, *v) + " is not a decimal number");
    return n;
}

struct names {
    const char* rank;
    const char* size;
    const char* local_rank;
    const char* local_size;
};

/// A rank and its size, both set or neither; rank below size, size at least 1.
std::optional<std::pair<std::size_t, std::size_t>> rank_and_size(const char* rank_name,
                                                                 const char* size_name) {
    const auto rank = number(rank_name);
    const auto size = number(size_name);
    if (!rank && !size) return std::nullopt;
    if (!size) {
        fail(setting(rank_name, *variable(rank_name)) + " is set but " + size_name + " is not");
    }
    if (!rank) {
        fail(setting(size_name, *variable(size_name)) + " is set but " + rank_name + " is not");
    }
    if (*size == 0) fail(setting(size_name, *variable(size_name)) + ": a size must be at least 1");
    if (*rank >= *size) {
        fail(setting(rank_name, *variable(rank_name)) + " is not below " +
             setting(size_name, *variable(size_name)) + " (ranks count from 0)");
    }
    return std::pair{*rank, *size};
}

/// A local size and the variable it came from.
struct node_size {
    std::size_t value;
    std::string from;
};

/// Slurm's tasks on this node: SLURM_NTASKS_PER_NODE when it is one number, else this node's
/// entry of SLURM_TASKS_PER_NODE ("4(x2),2": two nodes with 4 tasks, then one with 2).
std::optional<node_size> slurm_local_size() {
    if (const auto v = variable("SLURM_NTASKS_PER_NODE")) {
        if (const auto n = parse_number(*v))
            return node_size{*n, setting("SLURM_NTASKS_PER_NODE", *v)};
    }
    const auto list = variable("SLURM_TASKS_PER_NODE");
    if (!list) return std::nullopt;
    const auto node = number("SLURM_NODEID").value_or(0);
    const auto malformed = [&] {
        fail(setting("SLURM_TASKS_PER_NODE", *list) +
             " is not a list like '4(x2),2' (tasks per node, with repeats)");
    };
    std::size_t first = 0;  // the first node the current entry covers
    std::string_view rest = *list;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view entry = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        std::size_t repeat = 1;
        if (const auto paren = entry.find("(x"); paren != std::string_view::npos) {
            if (entry.back() != ')') malformed();
            const auto r = parse_number(entry.substr(paren + 2, entry.size() - paren - 3));
            if (!r || *r == 0) malformed();
            repeat = *r;
            entry = entry.substr(0, paren);
        }
        const auto tasks = parse_number(entry);
        if (!tasks) malformed();
        if (node < first + repeat) {
            return node_size{*tasks,
                             setting("SLURM_TASKS_PER_NODE", *list) + " for " +
                                 setting("SLURM_NODEID", variable("SLURM_NODEID").value_or("0"))};
        }
        first += repeat;
    }
    fail(setting("SLURM_NODEID", variable("SLURM_NODEID").value_or("0")) +
         " is past the nodes of " + setting("SLURM_TASKS_PER_NODE", *list));
}

/// The launcher's world; `local` is its word on this node's size, if any.
world from_launcher(const names& n, const std::optional<node_size>& local) {
    const auto global = rank_and_size(n.rank, n.size);
    world w{global->first, global->second, global->first, global->second};
    const auto local_rank = number(n.local_rank);
    if (!local_rank) {
        if (local) fail(local->from + " is set but " + n.local_rank + " is not");
        return w;  // no word on the node: one node
    }
    if (local) {
        if (local->value == 0 || local->value > w.size) {
            fail(local->from + " is not between 1 and " + setting(n.size, *variable(n.size)));
        }
        w.local_size = local->value;
    }
    if (*local_rank >= w.local_size) {
        fail(setting(n.local_rank, *variable(n.local_rank)) + " is not below " +
             (local ? local->from : setting(n.size, *variable(n.size))));
    }
    w.local_rank = *local_rank;
    return w;
}

/// `name`'s value as a local size, if set.
std::optional<node_size> local_size_from(const char* name) {
    const auto v = number(name);
    if (!v) return std::nullopt;
    return node_size{*v, setting(name, *variable(name))};
}

}  // namespace

world world::from_environment() {
    const names torchrun{"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
    const names open_mpi{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                         "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
    const names mpich{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};
    for (const names* n : {&torchrun, &open_mpi, &mpich}) {
        if (variable(n->rank) || variable(n->size)) {
            return from_launcher(*n, local_size_from(n->local_size));
        }
    }
    const names slurm{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"};
    if (variable(slurm.rank) || variable(slurm.size)) {
        // The pair's errors come before those of the node's entries; and the node's size is only
        // looked for where SLURM_LOCALID says there is a node to size.
        (void)rank_and_size(slurm.rank, slurm.size);
        return from_launcher(
            slurm, variable(slurm.local_rank) ? slurm_local_size() : std::optional<node_size>{});
    }
    return world{};
}

}  // namespace ferry
