// SPDX-License-Identifier: Apache-2.0
/// \file
/// OpenCV as the image tests' reference decoder, conversions between ferry's images and OpenCV's
/// matrices, and pixel comparisons (see support.hpp).
#include <cmath>
#include <cstring>
#include <limits>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>

#include "support.hpp"

namespace ops_test {

cv::Mat reference_decode(const file_bytes& f, int flags) {
    const cv::Mat raw(1, static_cast<int>(f.size()), CV_8U, const_cast<std::uint8_t*>(f.data()));
    const cv::Mat m = cv::imdecode(raw, flags);
    if (m.empty()) throw std::runtime_error("OpenCV could not decode a test file");
    return swap_red_blue(m);
}

cv::Mat swap_red_blue(const cv::Mat& m) {
    cv::Mat out;
    if (m.channels() == 3) {
        cv::cvtColor(m, out, cv::COLOR_BGR2RGB);
    } else if (m.channels() == 4) {
        cv::cvtColor(m, out, cv::COLOR_BGRA2RGBA);
    } else {
        out = m.clone();
    }
    return out;
}

cv::Mat decode_scaled(const file_bytes& f, int denom, bool fast, bool strict) {
    const ferry::image_info info = ferry::ops::probe_image(as_span(f));
    const ferry::image img = ferry::ops::decode_image(
        as_span(f),
        {.reduce_to = {(info.width + denom - 1) / denom, (info.height + denom - 1) / denom},
         .strict = strict,
         .fast = fast});
    return to_mat(img);
}

cv::Mat to_mat(const ferry::image& img) {
    if (img.empty()) return {};
    const cv::Mat view(img.height(), img.width(), CV_8UC(img.channels()),
                       const_cast<std::uint8_t*>(img.data().data()), img.row_bytes());
    return view.clone();
}

ferry::image to_image(const cv::Mat& m, ferry::pixel_format format) {
    ferry::image img(m.cols, m.rows, format);
    if (m.type() != CV_8UC(img.channels())) throw std::logic_error("to_image: channel mismatch");
    for (int y = 0; y < m.rows; ++y) {
        std::memcpy(img.data().data() + static_cast<std::size_t>(y) * img.row_bytes(), m.ptr(y),
                    img.row_bytes());
    }
    return img;
}

double mean_abs_diff(const cv::Mat& a, const cv::Mat& b) {
    if (a.size() != b.size() || a.type() != b.type() || a.empty())
        return std::numeric_limits<double>::infinity();
    return cv::norm(a, b, cv::NORM_L1) / static_cast<double>(a.total() * a.channels());
}

double max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
    if (a.size() != b.size() || a.type() != b.type() || a.empty())
        return std::numeric_limits<double>::infinity();
    return cv::norm(a, b, cv::NORM_INF);
}

void check_pixels(const ferry::image& got, const cv::Mat& want, double mean_tol, double max_tol,
                  const std::string& what) {
    BOOST_TEST_CONTEXT(what) {
        BOOST_TEST(got.width() == want.cols);
        BOOST_TEST(got.height() == want.rows);
        BOOST_TEST(got.channels() == want.channels());
        if (got.size() != ferry::image_size{want.cols, want.rows} ||
            got.channels() != want.channels())
            return;
        BOOST_TEST(got.data().size() == want.total() * want.elemSize());
        const cv::Mat g = to_mat(got);
        const double mean = mean_abs_diff(g, want);
        BOOST_TEST(mean <= mean_tol, "mean abs diff " << mean << " > " << mean_tol);
        if (max_tol >= 0) {
            const double worst = max_abs_diff(g, want);
            BOOST_TEST(worst <= max_tol, "max abs diff " << worst << " > " << max_tol);
        }
    }
}

}  // namespace ops_test
