#define BOOST_TEST_MODULE ferry_engine
#include <boost/test/unit_test.hpp>
#include <ferry/ferry.hpp>
#include <iostream>

BOOST_AUTO_TEST_CASE(smoke) {
    std::vector<int> v(1000);
    for (int i = 0; i < 1000; ++i) v[i] = i;
    auto p = ferry::from(v)
                 .map([](int x) { return x * 2; }, 4)
                 .filter([](int x) { return x % 3 != 0; })
                 .batch(10)
                 .build({.threads = 2});
    std::vector<int> got;
    for (auto& b : p)
        for (int x : b) got.push_back(x);
    std::vector<int> want;
    for (int i = 0; i < 1000; ++i)
        if ((i * 2) % 3 != 0) want.push_back(i * 2);
    BOOST_TEST(got == want);
    std::cout << p.stats();
}
