// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image trainer's checkpoint: where training stands (epoch, step, the epoch's running loss,
/// the loader's `ferry::pipeline_state`) and the model, written atomically and read back with
/// checks; and the --record-items file the resume tests read (torch_trainer's too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ferry/ferry.hpp"
#include "mlp.hpp"

namespace ferry_examples {

/// Where the training loop stands between two steps: what a resumed run needs to go on with the
/// same batches, the same learning rate schedule and the same epoch line.
struct train_position {
    int epoch = 1;                 ///< the epoch in progress (from 1, as the trainer prints it)
    std::size_t step = 0;          ///< SGD steps taken in the whole run (the schedule's clock)
    std::size_t batches = 0;       ///< steps taken in this epoch
    std::size_t seen = 0;          ///< images trained on in this epoch
    double loss_sum = 0;           ///< the sum of this epoch's batch losses
    ferry::pipeline_state loader;  ///< the training pipeline's `state()` after that step
};

/// Writes `pos` and `model` to `path` atomically: to `path.tmp`, then renamed over `path`, so
/// that a crash while writing leaves the previous checkpoint whole. The file: a line
/// `ferry-image-trainer-checkpoint 1`, a line of counters, a line `loader <pipeline_state>`,
/// then the model as `mlp::save` writes it. Throws `ferry::io_error` when it cannot.
inline void write_checkpoint(const std::filesystem::path& path, const train_position& pos,
                             const mlp& model) {
    std::filesystem::path tmp = path;
    tmp += ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw ferry::io_error("cannot write the checkpoint " + tmp.string());
        // %a: the loss sum exactly, so that the resumed epoch prints the uninterrupted one's loss.
        char loss[64];
        std::snprintf(loss, sizeof loss, "%a", pos.loss_sum);
        out << "ferry-image-trainer-checkpoint 1\n"
            << "epoch " << pos.epoch << " step " << pos.step << " batches " << pos.batches
            << " seen " << pos.seen << " loss_sum " << loss << '\n'
            << "loader " << pos.loader.serialize() << '\n';
        model.save(out);
        out.flush();
        if (!out) throw ferry::io_error("cannot write the checkpoint " + tmp.string());
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        throw ferry::io_error("cannot rename " + tmp.string() + " to " + path.string() + ": " +
                              ec.message());
    }
}

/// The bytes of the checkpoint at `path`; throws `ferry::io_error` naming it when it cannot be
/// read. Read before the data is loaded, so that a wrong path fails at once.
inline std::string read_checkpoint_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ferry::io_error("cannot open " + path.string(), false);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (in.bad()) throw ferry::io_error("cannot read " + path.string(), false);
    return std::move(bytes).str();
}

/// Reads what `write_checkpoint` wrote (`bytes`, from `read_checkpoint_file`) into `model`,
/// which must have the saved model's sizes, and returns the position. Throws
/// `ferry::invalid_argument` saying what is wrong (not a checkpoint, a malformed line, the
/// model's sizes, a file cut short).
inline train_position parse_checkpoint(const std::string& bytes, mlp& model) {
    std::istringstream in(bytes);
    std::string line;
    if (!std::getline(in, line) || line != "ferry-image-trainer-checkpoint 1") {
        throw ferry::invalid_argument("not an image_trainer checkpoint (first line '" +
                                      line.substr(0, 60) + "')");
    }
    train_position pos;
    {
        std::getline(in, line);
        std::istringstream counters(line);
        std::string k[5];
        std::string loss;
        counters >> k[0] >> pos.epoch >> k[1] >> pos.step >> k[2] >> pos.batches >> k[3] >>
            pos.seen >> k[4] >> loss;
        if (!counters || k[0] != "epoch" || k[1] != "step" || k[2] != "batches" || k[3] != "seen" ||
            k[4] != "loss_sum" || pos.epoch < 1) {
            throw ferry::invalid_argument("malformed counters line '" + line + "'");
        }
        char* end = nullptr;
        pos.loss_sum = std::strtod(loss.c_str(), &end);
        if (end == loss.c_str() || *end != '\0') {
            throw ferry::invalid_argument("malformed loss sum '" + loss + "'");
        }
    }
    std::getline(in, line);
    if (line.rfind("loader ", 0) != 0) {
        throw ferry::invalid_argument("no loader line (found '" + line.substr(0, 60) + "')");
    }
    pos.loader = ferry::pipeline_state::parse(line.substr(7));
    // The trainer's epochs count from 1, the pipeline's from 0; the state is always taken inside
    // an epoch's loop, so the two agree.
    if (pos.loader.epoch() + 1 != static_cast<std::uint64_t>(pos.epoch)) {
        throw ferry::invalid_argument("the counters say epoch " + std::to_string(pos.epoch) +
                                      ", the loader's state epoch " +
                                      std::to_string(pos.loader.epoch() + 1));
    }
    try {
        model.load(in);
    } catch (const std::runtime_error& e) {
        throw ferry::invalid_argument(e.what());
    }
    return pos;
}

/// --record-items: each trained item's dataset index, a line each, with a line `epoch E` where
/// an epoch starts or resumes and `checkpoint` after each checkpoint is written. Flushed after
/// every batch, so that the lines of the steps taken survive a crash.
class item_record {
  public:
    explicit item_record(const std::string& path) {
        if (path.empty()) return;
        out_.open(path, std::ios::app);
        if (!out_) throw ferry::io_error("cannot open --record-items file " + path, false);
    }
    void epoch(int e) { line("epoch " + std::to_string(e)); }
    void items(const std::vector<std::uint64_t>& indices) {
        if (!out_.is_open()) return;
        for (const auto i : indices) out_ << i << '\n';
        out_.flush();
    }
    void checkpoint() { line("checkpoint"); }

  private:
    void line(const std::string& text) {
        if (out_.is_open()) out_ << text << '\n' << std::flush;
    }
    std::ofstream out_;
};

}  // namespace ferry_examples
