// SPDX-License-Identifier: Apache-2.0
/// \file
/// torch_trainer's checkpoint, kept as libtorch users keep theirs: one `torch::save`-style
/// archive holding the model, the optimizer (AdamW's moment estimates) and where training stands,
/// ferry's `pipeline_state` included; written atomically and read back with checks.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "checkpoint.hpp"  // train_position, read_checkpoint_file
#include "ferry/ferry.hpp"

namespace ferry_examples {

/// Writes the model, the optimizer and `pos` to `path` atomically: one archive (what
/// `torch::save` writes) to `path.tmp`, then renamed over `path`, so that a crash while writing
/// leaves the previous checkpoint whole. `model_shape` names the network's sizes, checked on
/// resume (libtorch would otherwise load weights of another shape without a word). Throws
/// `ferry::io_error` when it cannot.
inline void save_torch_checkpoint(const std::filesystem::path& path, const train_position& pos,
                                  const std::string& model_shape, const torch::nn::Module& model,
                                  const torch::optim::Optimizer& optimizer) {
    torch::serialize::OutputArchive archive;
    archive.write("format", c10::IValue("ferry-torch-trainer-checkpoint 1"));
    archive.write("model_shape", c10::IValue(model_shape));
    archive.write("epoch", c10::IValue(static_cast<std::int64_t>(pos.epoch)));
    archive.write("step", c10::IValue(static_cast<std::int64_t>(pos.step)));
    archive.write("batches", c10::IValue(static_cast<std::int64_t>(pos.batches)));
    archive.write("seen", c10::IValue(static_cast<std::int64_t>(pos.seen)));
    // A double IValue is kept exactly: the resumed epoch prints the uninterrupted one's loss.
    archive.write("loss_sum", c10::IValue(pos.loss_sum));
    archive.write("loader", c10::IValue(pos.loader.serialize()));
    torch::serialize::OutputArchive model_archive;
    model.save(model_archive);
    archive.write("model", model_archive);
    torch::serialize::OutputArchive optimizer_archive;
    optimizer.save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);

    std::filesystem::path tmp = path;
    tmp += ".tmp";
    try {
        archive.save_to(tmp.string());
    } catch (const c10::Error& e) {
        throw ferry::io_error("cannot write the checkpoint " + tmp.string() + ": " +
                              e.what_without_backtrace());
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        throw ferry::io_error("cannot rename " + tmp.string() + " to " + path.string() + ": " +
                              ec.message());
    }
}

/// Reads what `save_torch_checkpoint` wrote (`bytes`, from `read_checkpoint_file`) into
/// `model` and `optimizer` and returns the position. Throws `ferry::invalid_argument` saying what
/// is wrong: not such a checkpoint (or cut short), another network shape, a malformed field.
inline train_position load_torch_checkpoint(const std::string& bytes,
                                            const std::string& model_shape,
                                            torch::nn::Module& model,
                                            torch::optim::Optimizer& optimizer) {
    try {
        torch::serialize::InputArchive archive;
        archive.load_from(bytes.data(), bytes.size());
        auto read = [&archive](const char* key) {
            c10::IValue v;
            archive.read(key, v);
            return v;
        };
        c10::IValue format;
        if (!archive.try_read("format", format) || !format.isString() ||
            format.toStringRef() != "ferry-torch-trainer-checkpoint 1") {
            throw ferry::invalid_argument("not a torch_trainer checkpoint");
        }
        const std::string saved_shape = read("model_shape").toStringRef();
        if (saved_shape != model_shape) {
            throw ferry::invalid_argument("the saved model is " + saved_shape + ", this run's is " +
                                          model_shape);
        }
        train_position pos;
        pos.epoch = static_cast<int>(read("epoch").toInt());
        pos.step = static_cast<std::size_t>(read("step").toInt());
        pos.batches = static_cast<std::size_t>(read("batches").toInt());
        pos.seen = static_cast<std::size_t>(read("seen").toInt());
        pos.loss_sum = read("loss_sum").toDouble();
        pos.loader = ferry::pipeline_state::parse(read("loader").toStringRef());
        // The trainer's epochs count from 1, the pipeline's from 0; the state is always taken
        // inside an epoch's loop, so the two agree.
        if (pos.epoch < 1 || pos.loader.epoch() + 1 != static_cast<std::uint64_t>(pos.epoch)) {
            throw ferry::invalid_argument("the counters say epoch " + std::to_string(pos.epoch) +
                                          ", the loader's state epoch " +
                                          std::to_string(pos.loader.epoch() + 1));
        }
        torch::serialize::InputArchive model_archive;
        archive.read("model", model_archive);
        model.load(model_archive);
        torch::serialize::InputArchive optimizer_archive;
        archive.read("optimizer", optimizer_archive);
        optimizer.load(optimizer_archive);
        return pos;
    } catch (const c10::Error& e) {
        // A file cut short or not an archive at all, a missing key, a field of the wrong type.
        throw ferry::invalid_argument(std::string("not a readable checkpoint: ") +
                                      e.what_without_backtrace());
    }
}

}  // namespace ferry_examples
