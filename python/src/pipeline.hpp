// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.Pipeline`: a built pipeline as Python sees it. Every call into the engine is made
/// without the GIL; Ctrl-C stops it; closing (or exiting the interpreter) never waits on the GIL
/// it holds.
#pragma once

#include <pybind11/pybind11.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "ferry/detail/spec.hpp"
#include "value.hpp"
#include "waiter.hpp"

namespace ferry::python {

namespace py = pybind11;

/// The running pipeline behind a `ferry.Pipeline`. Shared between the Python object, its epoch
/// iterators and the exit hook (which closes every pipeline still open).
///
/// Locks, never waited for with the GIL held (each method releases it first), which is what
/// keeps the engine's locks and the GIL from waiting on each other (python/README.md):
///  * `consumer_`: one consumer call at a time (next, abandon, state, close);
///  * `life_`: shared while a call uses the runtime, exclusive while `close` destroys it.
class py_pipeline {
  public:
    /// Takes over `rt` and registers the pipeline with the exit hook. `at_epoch_end`, when set,
    /// gets the stats at each epoch's end and at close (without the GIL): the tuner's decisions
    /// made since the last report reach the logger so (hooks.hpp).
    [[nodiscard]] static std::shared_ptr<py_pipeline> make(
        std::unique_ptr<detail::runtime> rt,
        std::function<void(const pipeline_stats&)> at_epoch_end = {});
    py_pipeline(const py_pipeline&) = delete;
    py_pipeline& operator=(const py_pipeline&) = delete;
    /// Closes (without the GIL, whichever thread drops the last reference).
    ~py_pipeline();

    /// The next element of the current epoch (starting one when none runs), or nothing at the
    /// epoch's end. The caller holds the GIL; it is released while the engine works, and a
    /// signal whose handler raises (Ctrl-C) stops the pipeline and is raised here
    /// (`py::error_already_set`). Throws what the engine's `next()` throws (`stage_error`).
    [[nodiscard]] std::optional<value> next();
    /// Ends the running epoch early (a `break`); the next `next()` starts a new one.
    void abandon_epoch();
    /// Stops for good; from any thread; a `next()` in progress returns promptly.
    void stop();
    [[nodiscard]] pipeline_stats stats();
    [[nodiscard]] std::vector<failure> failures();
    /// `pipeline_state::serialize()` of where the epoch stands.
    [[nodiscard]] std::string state();
    void write_trace(const std::filesystem::path& path);
    /// Stops, waits for the calls in progress (Python stages among them: the GIL is released)
    /// and frees the graph and its threads. Stats and failures stay readable. Idempotent.
    void close();
    [[nodiscard]] bool closed();

  private:
    py_pipeline(std::unique_ptr<detail::runtime> rt,
                std::function<void(const pipeline_stats&)> at_epoch_end);
    /// close() without the GIL.
    void close_released();
    /// Throws `ferry::invalid_argument` ("the pipeline is closed") when it is.
    detail::runtime& open_runtime(const char* what);

    std::mutex consumer_;
    std::shared_mutex life_;
    std::unique_ptr<detail::runtime> runtime_;
    std::function<void(const pipeline_stats&)> at_epoch_end_;
    std::optional<pipeline_stats> final_stats_;
    std::vector<failure> final_failures_;
    waiter waiter_;
};

/// One epoch's iteration (`iter(pipe)`): a `for` loop that leaves early (break, an exception,
/// the iterator dropped) ends the epoch's work, as a C++ range-for over a `ferry::pipeline`
/// does.
struct py_epoch {
    std::shared_ptr<py_pipeline> pipe;
    bool started = false;   ///< an element was taken
    bool finished = false;  ///< the epoch ended (or failed, or the pipeline stopped)
    py_epoch(const py_epoch&) = delete;
    py_epoch& operator=(const py_epoch&) = delete;
    explicit py_epoch(std::shared_ptr<py_pipeline> p) : pipe(std::move(p)) {}
    ~py_epoch();
};

/// Registers `Pipeline` and its epoch iterator in `m`, and the exit hook (`atexit`) that
/// closes every pipeline still open before the interpreter finalises.
void bind_pipeline(py::module_& m);

}  // namespace ferry::python
