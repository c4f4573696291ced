// SPDX-License-Identifier: Apache-2.0
/// \file
/// The benchmarks' command lines: `--name value` pairs, `--help`, and a clear exit on a bad one.
#pragma once

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ferry_perf {

/// Walks argv as `--name value` pairs, and `--flag`s without a value (an option whose value the
/// program never asks for takes none). `-h` or `--help` anywhere prints the usage to stdout and
/// exits 0. An option without a value, an unknown option or a bad value prints one line naming
/// the option and the value, then the usage, to stderr and exits 2.
///
/// \code
///     ferry_perf::options opt(argc, argv, "usage: many_sources [--items N] [--dir D]");
///     while (opt.next()) {
///         if (opt.name() == "--items") {
///             items = opt.integer<std::uint64_t>(1);
///         } else if (opt.name() == "--dir") {
///             dir = opt.value();
///         } else {
///             opt.unknown();
///         }
///     }
/// \endcode
class options {
  public:
    options(int argc, char** argv, const char* usage) : argc_(argc), argv_(argv), usage_(usage) {
        for (int i = 1; i < argc; ++i) {
            const std::string_view a = argv[i];
            if (a == "-h" || a == "--help") {
                std::printf("%s\n", usage_);
                std::exit(0);
            }
        }
    }

    /// Moves to the next option (past the last one's value, if it was asked for); false after
    /// the last.
    bool next() {
        i_ += took_value_ ? 2 : 1;
        took_value_ = false;
        return i_ < argc_;
    }

    /// The option, as given (e.g. "--items").
    [[nodiscard]] std::string_view name() const { return argv_[i_]; }

    /// Its value, as given.
    [[nodiscard]] std::string_view value() const {
        if (i_ + 1 >= argc_) fail(std::string(name()) + " needs a value");
        took_value_ = true;
        return argv_[i_ + 1];
    }

    /// Its value as a whole number of type T, at least `least`.
    template <class T = int>
    [[nodiscard]] T integer(T least = std::numeric_limits<T>::lowest()) const {
        const auto v = parse<T>(value());
        if (!v) bad_value("a whole number");
        if (*v < least) bad_value("a whole number >= " + std::to_string(least));
        return *v;
    }

    /// Its value as a floating-point number.
    [[nodiscard]] double number() const {
        const auto v = parse<double>(value());
        if (!v) bad_value("a number");
        return *v;
    }

    /// Its value as comma-separated numbers of type T ("1,8,64"); empty for an empty value.
    template <class T>
    [[nodiscard]] std::vector<T> list() const {
        std::vector<T> out;
        for (std::string_view rest = value(); !rest.empty();) {
            const auto comma = rest.find(',');
            const auto v = parse<T>(rest.substr(0, comma));
            if (!v)
                bad_value(std::is_integral_v<T> ? "whole numbers, comma-separated"
                                                : "numbers, comma-separated");
            out.push_back(*v);
            rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        }
        return out;
    }

    /// Exits: the option is not one this program has.
    [[noreturn]] void unknown() const { fail("unknown option '" + std::string(name()) + "'"); }

    /// Exits: the value is not what the option takes (`expected`, e.g. "a whole number").
    [[noreturn]] void bad_value(const std::string& expected) const {
        fail(std::string(name()) + " expects " + expected + ", not '" + std::string(value()) + "'");
    }

  private:
    /// The whole of `text` as a T, or nothing (not a number, trailing characters, out of range).
    template <class T>
    static std::optional<T> parse(std::string_view text) {
        T v{};
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc{} || ptr != end) return std::nullopt;
        return v;
    }

    [[noreturn]] void fail(const std::string& line) const {
        const std::string_view program = argv_[0];
        std::fprintf(stderr, "%s: %s\n%s\n",
                     std::string(program.substr(program.find_last_of('/') + 1)).c_str(),
                     line.c_str(), usage_);
        std::exit(2);
    }

    int argc_;
    char** argv_;
    const char* usage_;
    int i_ = 0;
    mutable bool took_value_ = false;  ///< value() was asked for the current option
};

}  // namespace ferry_perf
