// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image trainer's data: an image-folder tree (DIR/train/<class>/*, DIR/test/<class>/*), and
/// Fashion-MNIST from Debian's dataset-fashion-mnist unpacked into one on first use (one PNG per
/// image, as real datasets are stored).
#pragma once

#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache_dir.hpp"
#include "ferry/error.hpp"
#include "ferry/sources.hpp"

namespace ferry_examples {

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

// --- the dataset -------------------------------------------------------------------------------

inline const char* const fashion_classes[10] = {"t-shirt_top", "trouser",   "pullover", "dress",
                                                "coat",        "sandal",    "shirt",    "sneaker",
                                                "bag",         "ankle_boot"};
inline const fs::path fashion_source = "/usr/share/datasets/fashion-mnist";

/// One labelled file: `.path` and `.label`.
using item = ferry::sources::labelled_file;

struct dataset {
    std::vector<std::string> classes;
    std::vector<item> train;
    std::vector<item> test;
};

/// Reads a whole gzip file (the IDX files are gzipped).
inline std::vector<unsigned char> gunzip(const fs::path& p) {
    gzFile f = gzopen(p.c_str(), "rb");
    if (f == nullptr) throw std::runtime_error("cannot open " + p.string());
    std::vector<unsigned char> out;
    unsigned char chunk[1 << 16];
    int n = 0;
    while ((n = gzread(f, chunk, sizeof chunk)) > 0) out.insert(out.end(), chunk, chunk + n);
    const bool ok = n == 0;
    gzclose(f);
    if (!ok) throw std::runtime_error("corrupt gzip data in " + p.string());
    return out;
}

inline std::uint32_t be32(const unsigned char* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           p[3];
}

/// Unpacks one split (IDX images + labels) into dir/<class>/<index>.png.
inline void unpack_split(const std::string& prefix, const fs::path& dir) {
    const auto images = gunzip(fashion_source / (prefix + "-images-idx3-ubyte.gz"));
    const auto labels = gunzip(fashion_source / (prefix + "-labels-idx1-ubyte.gz"));
    if (images.size() < 16 || be32(images.data()) != 0x803 || labels.size() < 8 ||
        be32(labels.data()) != 0x801) {
        throw std::runtime_error("unexpected IDX headers in " + fashion_source.string());
    }
    const std::uint32_t n = be32(images.data() + 4);
    const std::uint32_t rows = be32(images.data() + 8);
    const std::uint32_t cols = be32(images.data() + 12);
    if (be32(labels.data() + 4) != n || images.size() < 16 + std::size_t{n} * rows * cols) {
        throw std::runtime_error("IDX image and label counts disagree");
    }
    for (const char* c : fashion_classes) fs::create_directories(dir / c);
    for (std::uint32_t i = 0; i < n; ++i) {
        const int label = labels[8 + i];
        char name[32];
        std::snprintf(name, sizeof name, "%05u.png", i);
        const fs::path out = dir / fashion_classes[label] / name;
        png_image img{};
        img.version = PNG_IMAGE_VERSION;
        img.width = cols;
        img.height = rows;
        img.format = PNG_FORMAT_GRAY;
        if (png_image_write_to_file(&img, out.c_str(), 0,
                                    images.data() + 16 + std::size_t{i} * rows * cols, 0,
                                    nullptr) == 0) {
            throw std::runtime_error("cannot write " + out.string() + ": " + img.message);
        }
    }
}

/// The Fashion-MNIST image folder, unpacked into `cache` on first use.
inline fs::path fashion_mnist(const fs::path& cache) {
    const fs::path root = cache / "fashion-mnist";
    if (fs::exists(root / ".complete")) return root;
    if (!fs::exists(fashion_source / "train-images-idx3-ubyte.gz")) {
        std::cerr << "Fashion-MNIST is not installed (" << fashion_source.string()
                  << " is missing). Install it with:\n    apt-get install dataset-fashion-mnist\n"
                  << "or point --data at your own image folder (DIR/train/<class>/*, "
                     "DIR/test/<class>/*).\n";
        std::exit(2);
    }
    std::cout << "unpacking Fashion-MNIST into " << root.string() << " (70 000 PNG files, once)"
              << std::endl;
    const auto t0 = steady::now();
    fs::remove_all(root);
    unpack_split("train", root / "train");
    unpack_split("t10k", root / "test");
    std::ofstream(root / ".complete") << "ok\n";
    std::cout << "unpacked in " << std::chrono::duration<double>(steady::now() - t0).count() << " s"
              << std::endl;
    return root;
}

/// The files of `dir`'s class folders (`ferry::sources::image_folder`, one level:
/// DIR/<class>/<file>) labelled by their class's place in `classes` (a class missing from `classes`
/// is left out).
inline std::vector<item> list_split(const fs::path& dir, const std::vector<std::string>& classes) {
    const auto files = ferry::sources::image_folder(dir, {.recursive = false});
    std::vector<item> items;
    for (const auto& f : files) {
        const auto& name = files.classes()[static_cast<std::size_t>(f.label)];
        const auto c = std::find(classes.begin(), classes.end(), name);
        if (c != classes.end()) items.push_back({f.path, static_cast<int>(c - classes.begin())});
    }
    return items;
}

inline dataset load_dataset(const fs::path& root) {
    dataset d;
    if (!fs::is_directory(root / "train") || !fs::is_directory(root / "test")) {
        std::cerr << root.string() << " needs train/ and test/ subfolders, each with one "
                  << "folder of images per class\n";
        std::exit(2);
    }
    // The train split names the classes; the test split's files are labelled by those names.
    const auto train = ferry::sources::image_folder(root / "train", {.recursive = false});
    d.classes = train.classes();
    d.train.assign(train.begin(), train.end());
    d.test = list_split(root / "test", d.classes);
    return d;
}

}  // namespace ferry_examples
