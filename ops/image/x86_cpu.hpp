// SPDX-License-Identifier: Apache-2.0
/// \file
/// Which x86 SIMD extensions the CPU running ferry has, for the image kernels that choose
/// their loops at run time (mirror.cpp, resample_x86.cpp, bilinear_x86.cpp,
/// jpeg_progressive.cpp: the library is built for baseline x86-64). Internal to ops/; only for
/// x86-64 builds with GCC or Clang.
#pragma once

#include <cstdlib>

#if defined(__x86_64__) && defined(__GNUC__)

namespace ferry::ops::x86 {

/// Whether the CPU has SSSE3 (asked once).
inline bool has_ssse3() {
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("ssse3") != 0;
    }();
    return yes;
}

/// Whether the CPU has AVX2 (asked once).
inline bool has_avx2() {
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    }();
    return yes;
}

/// Whether the CPU has BMI2's PDEP and runs it in a few cycles (asked once): AMD before Zen 3
/// (families 15h and 17h) has it microcoded, tens to hundreds of cycles per instruction.
inline bool has_fast_pdep() {
    static const bool yes = [] {
        // FERRY_JPEG_PDEP=0 takes the way CPUs without a fast PDEP take (perf/jpeg_decode
        // --no-pdep measures it); read once.
        if (const char* v = std::getenv("FERRY_JPEG_PDEP"); v != nullptr && v[0] == '0') {
            return false;
        }
        __builtin_cpu_init();
        return __builtin_cpu_supports("bmi2") != 0 && __builtin_cpu_is("amdfam15h") == 0 &&
               __builtin_cpu_is("amdfam17h") == 0;
    }();
    return yes;
}

}  // namespace ferry::ops::x86

#endif
