// SPDX-License-Identifier: Apache-2.0
/// \file
/// The one "expect an exception of type E" helper, for every suite:
/// \code
///   #include "../support/expect.hpp"
///   const auto e = ferry_test::expect_throw<ferry::stage_error>([&] { (void)drain(p); });
///   BOOST_REQUIRE(e.has_value());
///   BOOST_TEST(e->item() == 17u);
///   BOOST_TEST(ferry_test::expect_throw<ferry::io_error>(read).what().starts_with("read_file"));
/// \endcode
#pragma once

#include <boost/core/demangle.hpp>
#include <boost/test/unit_test.hpp>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

namespace ferry_test {

/// What `expect_throw<E>` caught: the exception (a copy of it as an `E`), or nothing.
template <class E>
class thrown : public std::optional<E> {
  public:
    using std::optional<E>::optional;
    /// The exception's message; "" when nothing was caught (the failure is recorded already).
    [[nodiscard]] std::string what() const { return this->has_value() ? (*this)->what() : ""; }
};

/// Runs `f`, which must throw an `E`, and returns what it caught. When `f` returns normally or
/// throws anything else, records a test failure (saying what, after `context`) and returns an
/// empty result, so that the case goes on to its other checks; `BOOST_REQUIRE(e.has_value())`
/// where the rest needs the exception.
template <class E, class F>
thrown<E> expect_throw(F&& f, std::string_view context = {}) {
    const std::string expected = boost::core::demangle(typeid(E).name());
    const std::string where = context.empty() ? std::string() : std::string(context) + ": ";
    try {
        std::forward<F>(f)();
    } catch (const E& e) {
        return thrown<E>(e);
    } catch (const std::exception& e) {
        BOOST_ERROR(where << "threw " << boost::core::demangle(typeid(e).name()) << " (" << e.what()
                          << ") instead of " << expected);
        return {};
    } catch (...) {
        BOOST_ERROR(where << "threw a non-std exception instead of " << expected);
        return {};
    }
    BOOST_ERROR(where << "did not throw " << expected);
    return {};
}

/// `expect_throw<E>(f)`, and the message must contain `words`: records a failure naming both
/// otherwise.
template <class E, class F>
thrown<E> expect_throw_saying(F&& f, const std::string& words) {
    auto e = expect_throw<E>(std::forward<F>(f), "expected one saying '" + words + "'");
    if (e) {
        BOOST_TEST(e.what().find(words) != std::string::npos,
                   "message '" << e.what() << "' lacks '" << words << "'");
    }
    return e;
}

}  // namespace ferry_test
