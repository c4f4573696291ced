// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::sources on a temporary tree: files (extensions, case, recursion, sorted),
/// image_folder (classes, labels, order), lines (blank lines, CRLF), and io_errors that name the
/// path.
#include <boost/test/unit_test.hpp>
#include <ferry/input.hpp>
#include <ferry/sources.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ranges>
#include <string>
#include <vector>

#include "../support/ops_support.hpp"

namespace fs = std::filesystem;
using ops_test::expect_throw;
using ops_test::temp_folder;

namespace sources_test {

void touch(const fs::path& p, const std::string& contents = "x") {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << contents;
}

/// Paths relative to `root`, in the generic form, for readable comparisons.
std::vector<std::string> relative(const std::vector<fs::path>& paths, const fs::path& root) {
    std::vector<std::string> out;
    for (const auto& p : paths) out.push_back(p.lexically_relative(root).generic_string());
    return out;
}

}  // namespace sources_test

// labelled_files is what from(range, sampling) takes, and its elements name themselves.
static_assert(std::ranges::random_access_range<ferry::sources::labelled_files>);
static_assert(std::ranges::sized_range<ferry::sources::labelled_files>);
static_assert(ferry::describable<ferry::sources::labelled_file>);

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(sources)
using namespace sources_test;

// files(): only the asked-for endings, whatever their case (with or without the dot), sorted;
// subfolders only with recursive; folders themselves are never listed.
BOOST_AUTO_TEST_CASE(files_lists_matching_files_sorted) {
    temp_folder d;
    for (const char* name : {"b.jpg", "a.PNG", "c.txt", "z.Jpg", "sub/d.jpg", "sub/deep/e.png",
                             "sub/f.gif", "archive.tar.gz"}) {
        touch(d.path() / name);
    }
    fs::create_directories(d.path() / "folder.jpg");  // a folder with a matching name

    const auto flat = ferry::sources::files(d.path(), {.extensions = {".jpg", "png"}});
    BOOST_TEST(relative(flat, d.path()) == (std::vector<std::string>{"a.PNG", "b.jpg", "z.Jpg"}),
               boost::test_tools::per_element());

    const auto deep =
        ferry::sources::files(d.path(), {.extensions = {".JPG", ".png"}, .recursive = true});
    BOOST_TEST(relative(deep, d.path()) == (std::vector<std::string>{"a.PNG", "b.jpg", "sub/d.jpg",
                                                                     "sub/deep/e.png", "z.Jpg"}),
               boost::test_tools::per_element());

    BOOST_TEST(relative(ferry::sources::files(d.path(), {.extensions = {".tar.gz"}}), d.path()) ==
                   (std::vector<std::string>{"archive.tar.gz"}),
               boost::test_tools::per_element());
    // No extensions: every regular file.
    BOOST_TEST(ferry::sources::files(d.path()).size() == 5u);
    BOOST_TEST(ferry::sources::files(d.path(), {.recursive = true}).size() == 8u);
}

// image_folder(): classes are the sorted subfolders, labels index them, files come class by
// class, sorted; files at the top are not items; an empty class folder is still a class.
BOOST_AUTO_TEST_CASE(image_folder_labels_files_by_sorted_class) {
    temp_folder d;
    for (const char* name :
         {"dog/2.png", "dog/1.png", "cat/b.jpg", "cat/a.jpg", "cat/more/c.jpg", "readme.txt"}) {
        touch(d.path() / name);
    }
    fs::create_directories(d.path() / "emu");

    const auto data = ferry::sources::image_folder(d.path());
    BOOST_TEST(data.classes() == (std::vector<std::string>{"cat", "dog", "emu"}),
               boost::test_tools::per_element());
    BOOST_REQUIRE_EQUAL(data.size(), 5u);
    std::vector<std::string> names;
    std::vector<int> labels;
    for (const auto& f : data) {
        names.push_back(f.path.lexically_relative(d.path()).generic_string());
        labels.push_back(f.label);
    }
    BOOST_TEST(names == (std::vector<std::string>{"cat/a.jpg", "cat/b.jpg", "cat/more/c.jpg",
                                                  "dog/1.png", "dog/2.png"}),
               boost::test_tools::per_element());
    BOOST_TEST(labels == (std::vector<int>{0, 0, 0, 1, 1}), boost::test_tools::per_element());
    BOOST_TEST(data[3].path == d.path() / "dog" / "1.png");
    BOOST_TEST(ferry::input_name(data[0]) == (d.path() / "cat" / "a.jpg").generic_string());

    const auto flat =
        ferry::sources::image_folder(d.path(), {.extensions = {".jpg"}, .recursive = false});
    BOOST_TEST(flat.size() == 2u);
    BOOST_TEST(flat.classes().size() == 3u);
}

// lines(): file order, blank and whitespace-only lines skipped, CRLF endings removed, a last
// line without a newline kept; other whitespace is kept as written.
BOOST_AUTO_TEST_CASE(lines_skips_blank_lines_and_crlf) {
    temp_folder d;
    const auto list = d.path() / "list.txt";
    touch(list, "http://a/1.jpg\r\n\r\n  \nb.jpg\n\t\n  c d.jpg \nlast");
    BOOST_TEST(ferry::sources::lines(list) ==
                   (std::vector<std::string>{"http://a/1.jpg", "b.jpg", "  c d.jpg ", "last"}),
               boost::test_tools::per_element());
    touch(d.path() / "empty.txt", "");
    BOOST_TEST(ferry::sources::lines(d.path() / "empty.txt").empty());
}

// A missing folder or file, or a file where a folder is expected (and the reverse), is an
// io_error naming the path, not transient (reading again will not help).
BOOST_AUTO_TEST_CASE(missing_paths_are_io_errors_naming_them) {
    temp_folder d;
    const auto missing = d.path() / "nope";
    touch(d.path() / "file.txt");
    const auto check = [](auto&& call, const fs::path& p, const std::string& why) {
        const auto e = expect_throw<ferry::io_error>(call, p.string());
        BOOST_TEST(e.what().find("'" + p.string() + "'") != std::string::npos, e.what());
        BOOST_TEST(e.what().find(why) != std::string::npos, e.what());
        if (e) BOOST_TEST(!e->transient());
    };
    check([&] { (void)ferry::sources::files(missing); }, missing, "no such folder");
    check([&] { (void)ferry::sources::image_folder(missing); }, missing, "no such folder");
    check([&] { (void)ferry::sources::lines(missing); }, missing, "no such file");
    check([&] { (void)ferry::sources::files(d.path() / "file.txt"); }, d.path() / "file.txt",
          "not a folder");
    check([&] { (void)ferry::sources::lines(d.path()); }, d.path(), "a folder");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
