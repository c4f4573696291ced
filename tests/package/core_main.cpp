// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of an installed ferry::core alone (no engine, no TBB on its link line): bytes and
/// read_file, tensors, collate and the DLPack export. Exits non-zero on any mismatch.

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <ferry/bytes.hpp>
#include <ferry/collate.hpp>
#include <ferry/error.hpp>
#include <ferry/tensor.hpp>

#if FERRY_TEST_DLPACK
#include <dlpack/dlpack.h>
#endif

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "package test (core): FAILED: %s\n", what);
        ++failures;
    }
}

}  // namespace

int main(int argc, char** argv) {
    // read_file: this program's own file, then a missing one.
    check(argc > 0 && ferry::ops::read_file(argv[0]).size() > 0, "read_file reads a file");
    try {
        (void)ferry::ops::read_file("/nonexistent/ferry-package-test");
        check(false, "read_file of a missing file throws");
    } catch (const ferry::io_error& e) {
        check(!e.transient() && std::strstr(e.what(), "ferry-package-test") != nullptr,
              "the io_error names the path and is not transient");
    }
    const ferry::bytes b = ferry::bytes::from_string("core");
    const ferry::bytes copy = b;
    check(copy.size() == 4 && copy.data() != b.data() && std::memcmp(copy.data(), b.data(), 4) == 0,
          "a copy of bytes is a deep copy");

    // collate of two f32 [3] tensors: one contiguous [2, 3] batch.
    std::vector<ferry::tensor> rows;
    for (int r = 0; r < 2; ++r) {
        ferry::tensor t(ferry::dtype::f32, {3});
        for (int i = 0; i < 3; ++i) t.data_as<float>()[i] = static_cast<float>(r * 10 + i);
        rows.push_back(t);
    }
    const ferry::tensor batch = ferry::ops::collate(std::move(rows));
    check(batch.shape() == std::vector<std::int64_t>{2, 3} && batch.data_as<float>()[4] == 11.0F,
          "collate stacks tensors");

#if FERRY_TEST_DLPACK
    DLManagedTensor* dl = batch.to_dlpack();
    check(dl->dl_tensor.ndim == 2 && dl->dl_tensor.shape[1] == 3 &&
              dl->dl_tensor.dtype.code == kDLFloat && dl->dl_tensor.data == batch.data(),
          "to_dlpack exports the batch without a copy");
    dl->deleter(dl);
#endif

    if (failures != 0) return 1;
    std::puts("package test (core): ok");
    return 0;
}
