// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: map_async(f) with an f that returns an int: one error, that f must return a
/// std::future or use map_async<U> with a completion.
// expect-error: ferry::builder<T>::map_async\(f\): f\(T\) must return a std::future<U>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2}).map_async([](int x) { return x; }, 4).batch(2);
    (void)b;
}
