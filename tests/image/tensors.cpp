// SPDX-License-Identifier: Apache-2.0
/// \file
/// Images as values and tensors: deep copies, to_tensor, collate of images and of tensors, and
/// where OpenCV runs (suite ops/transforms, with the transforms in transforms.cpp).
#include <boost/test/unit_test.hpp>

#include <cstring>

#include "transforms_support.hpp"

using namespace ops_test;

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(transforms)
using namespace transforms_test;

// An image owns its pixels: a copy has its own (same size, format and bytes), a move hands them
// over and leaves an empty 0 x 0 image, and a copy of an empty image is empty.
BOOST_AUTO_TEST_CASE(image_copies_are_deep_and_moves_leave_it_empty) {
    ferry::image img = test_image(ferry::pixel_format::rgba);
    const ferry::image copy = img;
    BOOST_TEST(copy.data().data() != img.data().data());
    BOOST_TEST((copy.size() == img.size() && copy.format() == img.format()));
    BOOST_TEST_REQUIRE(copy.data().size() == img.data().size());
    BOOST_TEST(std::memcmp(copy.data().data(), img.data().data(), img.data().size()) == 0);

    const std::uint8_t* pixels = img.data().data();
    ferry::image moved;
    moved = std::move(img);
    BOOST_TEST(moved.data().data() == pixels);
    BOOST_TEST((moved.size() == ferry::image_size{97, 61}));
    // NOLINTNEXTLINE(bugprone-use-after-move): what a move leaves is the point
    BOOST_TEST((img.empty() && img.width() == 0 && img.height() == 0 && img.data().empty()));

    const ferry::image copy_of_empty = img;
    BOOST_TEST(copy_of_empty.empty());
    ferry::image assigned(4, 4);
    assigned = copy;
    BOOST_TEST((assigned.size() == copy.size() && assigned.data().data() != copy.data().data()));
}

// to_tensor gives a u8 H x W x C tensor of the same bytes.
BOOST_AUTO_TEST_CASE(to_tensor_is_hwc_u8_with_the_same_bytes) {
    for (const auto format :
         {ferry::pixel_format::rgb, ferry::pixel_format::gray, ferry::pixel_format::rgba}) {
        const ferry::image img = test_image(format);
        const ferry::tensor t = ferry::ops::to_tensor(img);
        BOOST_TEST(t.dtype() == ferry::dtype::u8);
        BOOST_TEST(t.shape() == (std::vector<std::int64_t>{61, 97, img.channels()}),
                   boost::test_tools::per_element());
        BOOST_TEST(t.is_contiguous());
        BOOST_TEST_REQUIRE(t.nbytes() == img.data().size());
        BOOST_TEST(std::memcmp(t.data(), img.data().data(), t.nbytes()) == 0);
    }
}

// to_tensor of an rvalue moves the pixels (same memory); of an lvalue it copies and leaves the
// image as it was.
BOOST_AUTO_TEST_CASE(to_tensor_of_an_rvalue_does_not_copy) {
    ferry::image img = test_image();
    const void* pixels = img.data().data();
    const ferry::tensor moved = ferry::ops::to_tensor(std::move(img));
    BOOST_TEST(moved.data() == pixels);

    const ferry::image kept = test_image();
    const ferry::tensor copied = ferry::ops::to_tensor(kept);
    BOOST_TEST(copied.data() != static_cast<const void*>(kept.data().data()));
    check_pixels(kept, test_mat(), 0, 0, "image after to_tensor(lvalue)");
}

// collate stacks images into N x H x W x C, each image's bytes at its offset.
BOOST_AUTO_TEST_CASE(collate_stacks_images_in_order) {
    std::vector<ferry::image> batch;
    std::vector<cv::Mat> mats;
    for (int i = 0; i < 5; ++i) {
        mats.push_back(swap_red_blue(photo(31, 17, 3, 100 + static_cast<std::uint32_t>(i))));
        batch.push_back(to_image(mats.back(), ferry::pixel_format::rgb));
    }
    const ferry::tensor t = ferry::ops::collate(std::move(batch));
    BOOST_TEST(t.dtype() == ferry::dtype::u8);
    BOOST_TEST(t.shape() == (std::vector<std::int64_t>{5, 17, 31, 3}),
               boost::test_tools::per_element());
    BOOST_TEST(t.is_contiguous());
    BOOST_TEST_REQUIRE(t.nbytes() == std::size_t{5 * 17 * 31 * 3});
    const auto* base = static_cast<const std::uint8_t*>(t.data());
    for (int i = 0; i < 5; ++i) {
        BOOST_TEST(std::memcmp(base + static_cast<std::size_t>(i) * 17 * 31 * 3, mats[i].data,
                               17 * 31 * 3) == 0,
                   "image " << i);
    }
}

// Images of another size or format are invalid_arguments naming the first odd one; so is an
// empty batch.
BOOST_AUTO_TEST_CASE(collate_rejects_mismatched_images_naming_the_index) {
    const auto batch_with = [](int odd_index, ferry::image odd) {
        std::vector<ferry::image> batch;
        for (int i = 0; i < 8; ++i) {
            batch.push_back(i == odd_index ? odd : ferry::image(10, 8, ferry::pixel_format::rgb));
        }
        return batch;
    };
    try {
        (void)ferry::ops::collate(batch_with(5, ferry::image(12, 8, ferry::pixel_format::rgb)));
        BOOST_ERROR("a batch with one 12x8 image among 10x8 ones was collated");
    } catch (const ferry::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find('5') != std::string::npos,
                   "message does not name index 5: " << e.what());
    }
    try {
        (void)ferry::ops::collate(batch_with(6, ferry::image(10, 8, ferry::pixel_format::gray)));
        BOOST_ERROR("a batch with one gray image among RGB ones was collated");
    } catch (const ferry::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find('6') != std::string::npos,
                   "message does not name index 6: " << e.what());
    }
    BOOST_CHECK_THROW((void)ferry::ops::collate(std::vector<ferry::image>{}),
                      ferry::invalid_argument);
}

// collate allocates the batch once, with the given allocator and the exact size, and the batch
// lives in that memory.
BOOST_AUTO_TEST_CASE(collate_allocates_once_with_the_given_allocator) {
    recording_allocator alloc;
    std::vector<ferry::image> batch;
    for (int i = 0; i < 4; ++i) batch.push_back(test_image());
    {
        const ferry::tensor t = ferry::ops::collate(std::move(batch), {.alloc = alloc.get()});
        BOOST_TEST(alloc.st->calls == 1);
        BOOST_TEST(alloc.st->requested == std::size_t{4 * 61 * 97 * 3});
        BOOST_TEST(static_cast<const void*>(alloc.st->last) == t.data());
        BOOST_TEST(std::memcmp(static_cast<const std::uint8_t*>(t.data()) + 3 * 61 * 97 * 3,
                               test_mat().data, 61 * 97 * 3) == 0);
        BOOST_TEST(!*alloc.st->released);
    }
    BOOST_TEST(*alloc.st->released);  // the tensor gave the memory back
}

// collate stacks equally shaped tensors into N x ...; other shapes or dtypes, or none, are
// invalid_arguments.
BOOST_AUTO_TEST_CASE(collate_stacks_tensors) {
    std::vector<ferry::tensor> parts;
    for (int i = 0; i < 3; ++i) {
        ferry::tensor t(ferry::dtype::f32, {2, 3});
        for (int k = 0; k < 6; ++k) t.data_as<float>()[k] = static_cast<float>(i * 10 + k);
        parts.push_back(t);
    }
    const ferry::tensor stacked = ferry::ops::collate(parts);
    BOOST_TEST(stacked.dtype() == ferry::dtype::f32);
    BOOST_TEST(stacked.shape() == (std::vector<std::int64_t>{3, 2, 3}),
               boost::test_tools::per_element());
    const float* v = stacked.data_as<float>();
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 6; ++k) BOOST_TEST(v[i * 6 + k] == static_cast<float>(i * 10 + k));

    std::vector<ferry::tensor> odd_shape = parts;
    odd_shape.push_back(parts[0]);
    odd_shape.push_back(parts[1]);
    odd_shape.push_back(ferry::tensor(ferry::dtype::f32, {3, 2}));  // index 5
    try {
        (void)ferry::ops::collate(odd_shape);
        BOOST_ERROR("tensors of shapes [2, 3] and [3, 2] were collated");
    } catch (const ferry::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find('5') != std::string::npos,
                   "message does not name index 5: " << e.what());
    }
    std::vector<ferry::tensor> odd_type = parts;
    odd_type.push_back(ferry::tensor(ferry::dtype::i32, {2, 3}));
    BOOST_CHECK_THROW((void)ferry::ops::collate(odd_type), ferry::invalid_argument);
    BOOST_CHECK_THROW((void)ferry::ops::collate(std::vector<ferry::tensor>{}),
                      ferry::invalid_argument);
}

// A pipeline parallelises over items: the image ops keep OpenCV on the calling thread unless
// the user chose otherwise, and a choice made with set_opencv_threads stands.
BOOST_AUTO_TEST_CASE(image_ops_run_opencv_on_the_calling_thread_unless_told_otherwise) {
    ferry::image img(64, 48);
    std::memset(img.data().data(), 90, img.data().size());
    const ferry::image small = ferry::ops::resize(img, 16, 12);
    BOOST_TEST(small.width() == 16);
    BOOST_TEST(cv::getNumThreads() == 1);
    ferry::ops::set_opencv_threads(3);
    const ferry::image again = ferry::ops::resize(img, 16, 12);
    BOOST_TEST(again.data()[0] == small.data()[0]);
    BOOST_TEST(cv::getNumThreads() == 3);
    ferry::ops::set_opencv_threads(1);
    BOOST_TEST(cv::getNumThreads() == 1);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
