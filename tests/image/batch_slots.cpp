// SPDX-License-Identifier: Apache-2.0
/// \file
/// Batches written in place (`ferry::batch_slots`, `decode_random_resized_crop_into`, `collate`
/// of slots): in a pipeline every batch holds, byte for byte and in order, what
/// decode_random_resized_crop (+ flip) and collate give; batches whose slots are in order are the
/// slots' own memory (no copy), and an item left out (a corrupt file under skip) shifts the
/// batches after it, which are then copied with the same pixels; PNG and EXIF-oriented JPEGs go
/// through the copying path; what cannot work is refused with a message; no batch is held after
/// the run.

#include <boost/test/unit_test.hpp>

#include <ferry/batch_slots.hpp>
#include <ferry/ferry.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "support.hpp"

namespace batch_slots_test {

using namespace ops_test;

constexpr int width = 64;
constexpr int height = 48;
constexpr std::size_t batch = 8;

/// 29 files: JPEGs of several sizes and samplings, a PNG at 9 and an EXIF-oriented JPEG at 17
/// (neither resized from the JPEG decoder's rows: the copying path).
std::vector<file_bytes> files() {
    std::vector<file_bytes> out;
    for (int i = 0; i < 29; ++i) {
        const cv::Mat m = photo(120 + 7 * i, 90 + 5 * (i % 4), 3, static_cast<std::uint32_t>(i));
        if (i == 9) {
            out.push_back(encode(".png", m));
        } else if (i == 17) {
            out.push_back(
                with_exif_orientation(write_jpeg(m, jpeg_subsampling::s420, 85), 6, false));
        } else {
            out.push_back(
                write_jpeg(m, i % 2 == 0 ? jpeg_subsampling::s420 : jpeg_subsampling::s444, 90));
        }
    }
    return out;
}

bool flipped(std::uint64_t index) {
    return index % 3 == 1;
}

/// What decode_random_resized_crop + flip gives for file `i` (the same draw as the pipeline's).
std::vector<std::uint8_t> expected(const file_bytes& f, std::uint64_t i) {
    std::mt19937_64 rng(1000 + i);
    const auto img = ferry::ops::decode_random_resized_crop(as_span(f), width, height, rng,
                                                            {.flip = flipped(i)});
    return {img.data().begin(), img.data().end()};
}

struct run_result {
    std::vector<ferry::tensor> batches;
    std::vector<const void*> batch_memory;  ///< per position: its slot's batch tensor's data
    ferry::pipeline_stats stats;
};

run_result run(const std::vector<file_bytes>& fs, const ferry::batch_slots& slots) {
    run_result r;
    r.batch_memory.assign(fs.size(), nullptr);
    std::vector<std::uint64_t> indices(fs.size());
    for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = i;
    auto p = ferry::from(indices)
                 .map(
                     [&](std::uint64_t i, const ferry::item_info& item) {
                         const ferry::image_slot slot = slots.claim(item);
                         r.batch_memory[i] = slot.batch_tensor().data();  // one writer per i
                         std::mt19937_64 rng(1000 + i);
                         return ferry::ops::decode_random_resized_crop_into(
                             as_span(fs[i]), slot, rng, {.flip = flipped(i)});
                     },
                     {.concurrency = 2, .name = "decode", .on_error = ferry::skip})
                 .batch(batch)
                 .map(ferry::ops::collate)
                 .build({.threads = 2, .logger = [](ferry::log_level, std::string_view) {}});
    for (auto& t : p) r.batches.push_back(std::move(t));
    r.stats = p.stats();
    return r;
}

/// The batches hold `delivered`'s expected pixels, in order, `batch` at a time.
void check_pixels(const run_result& r, const std::vector<file_bytes>& fs,
                  const std::vector<std::uint64_t>& delivered) {
    const std::size_t each = static_cast<std::size_t>(width) * height * 3;
    std::size_t k = 0;
    for (const auto& t : r.batches) {
        BOOST_TEST_REQUIRE(t.dim() == 4U);
        BOOST_TEST(t.size(1) == height);
        BOOST_TEST(t.size(2) == width);
        BOOST_TEST(t.size(3) == 3);
        const auto* bytes = static_cast<const std::uint8_t*>(t.data());
        for (std::int64_t j = 0; j < t.size(0); ++j, ++k) {
            BOOST_TEST_REQUIRE(k < delivered.size());
            const auto want = expected(fs[delivered[k]], delivered[k]);
            BOOST_TEST(
                std::memcmp(bytes + static_cast<std::size_t>(j) * each, want.data(), each) == 0,
                "batch item " << j << " (file " << delivered[k] << ")");
        }
    }
    BOOST_TEST(k == delivered.size());
}

}  // namespace batch_slots_test

BOOST_AUTO_TEST_SUITE(batch_slots_in_place)
using namespace batch_slots_test;

// Every item in its place: each batch is its slots' own tensor, with the pixels of
// decode_random_resized_crop (+ flip) and collate, in order; the last batch is the first 5 slots.
BOOST_AUTO_TEST_CASE(each_crop_is_written_into_its_slot_and_batches_need_no_copy) {
    const auto fs = files();
    std::vector<std::uint64_t> all(fs.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    ferry::batch_slots slots(batch, width, height);
    {
        const run_result r = run(fs, slots);
        BOOST_TEST_REQUIRE(r.batches.size() == 4U);
        BOOST_TEST(r.batches.back().size(0) == 5);
        check_pixels(r, fs, all);
        for (std::size_t b = 0; b < r.batches.size(); ++b) {
            BOOST_TEST(r.batches[b].data() == r.batch_memory[b * batch], "batch " << b);
        }
        BOOST_TEST(r.stats.delivered == fs.size());
    }
    BOOST_TEST(slots.live_batches() == 0U);
}

// A corrupt file at 3 is skipped: the batches after it hold the next items (shifted by one), so
// they are copies, with the same pixels as the reference; the counts add up.
BOOST_AUTO_TEST_CASE(an_item_left_out_shifts_the_batches_and_they_are_copied) {
    auto fs = files();
    fs[3].resize(fs[3].size() / 3);  // truncated: a decode_error under strict decoding
    std::vector<std::uint64_t> delivered;
    for (std::uint64_t i = 0; i < fs.size(); ++i) {
        if (i != 3) delivered.push_back(i);
    }
    ferry::batch_slots slots(batch, width, height);
    {
        const run_result r = run(fs, slots);
        BOOST_TEST_REQUIRE(r.batches.size() == 4U);
        BOOST_TEST(r.batches.back().size(0) == 4);
        check_pixels(r, fs, delivered);
        for (std::size_t b = 0; b < r.batches.size(); ++b) {
            BOOST_TEST(r.batches[b].data() != r.batch_memory[b * batch], "batch " << b);
        }
        BOOST_TEST(r.stats.delivered == fs.size() - 1);
        BOOST_TEST(r.stats.failed == 1U);
    }
    BOOST_TEST(slots.live_batches() == 0U);
}

// The same position of the same epoch gets the same slot; another epoch another batch.
BOOST_AUTO_TEST_CASE(a_position_has_one_slot_per_epoch) {
    ferry::batch_slots slots(4, 8, 8, ferry::pixel_format::gray);
    const auto a = slots.claim({.epoch = 0, .position = 6});
    const auto again = slots.claim({.epoch = 0, .position = 6});
    const auto next = slots.claim({.epoch = 1, .position = 6});
    BOOST_TEST(a.index() == 2U);
    BOOST_TEST(a.pixels().data() == again.pixels().data());
    BOOST_TEST(a.batch() != next.batch());
    BOOST_TEST(a.pixels().size() == 64U);
    BOOST_TEST(a.channels() == 1);
    BOOST_TEST(slots.live_batches() == 2U);
}

// What cannot work says why.
BOOST_AUTO_TEST_CASE(refuses_what_cannot_work) {
    const auto fs = files();
    std::mt19937_64 rng(1);
    const auto says = [](auto f, const std::string& words) {
        try {
            f();
            BOOST_ERROR("no exception; expected one saying: " << words);
        } catch (const ferry::invalid_argument& e) {
            BOOST_TEST(std::string(e.what()).find(words) != std::string::npos, e.what());
        }
    };
    says([&] { (void)ferry::ops::decode_random_resized_crop_into(as_span(fs[0]), {}, rng); },
         "decode_random_resized_crop_into: an empty slot");
    ferry::batch_slots gray(4, 8, 8, ferry::pixel_format::gray);
    says(
        [&] {
            (void)ferry::ops::decode_random_resized_crop_into(as_span(fs[0]),
                                                              gray.claim({.position = 0}), rng);
        },
        "the slot holds gray pixels, the options ask for rgb");
    says([] { ferry::batch_slots(0, 8, 8); }, "batch_slots: batch size 0, 8x8");
    ferry::batch_slots other(4, 16, 8, ferry::pixel_format::gray);
    says(
        [&] {
            (void)ferry::ops::collate(std::vector<ferry::image_slot>{gray.claim({.position = 0}),
                                                                     other.claim({.position = 1})});
        },
        "collate: slot 1 is not of the size and format of slot 0");
    says([] { (void)ferry::ops::collate(std::vector<ferry::image_slot>{}); },
         "collate: the batch is empty");
}

// flip mirrors decode_random_resized_crop's result (the same draw).
BOOST_AUTO_TEST_CASE(flip_mirrors_the_crop) {
    const auto fs = files();
    std::mt19937_64 a(5), b(5);
    const auto plain = ferry::ops::decode_random_resized_crop(as_span(fs[4]), width, height, a);
    const auto flip =
        ferry::ops::decode_random_resized_crop(as_span(fs[4]), width, height, b, {.flip = true});
    const auto mirrored = ferry::ops::horizontal_flip(plain);
    BOOST_TEST(std::memcmp(flip.data().data(), mirrored.data().data(), flip.data().size()) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
