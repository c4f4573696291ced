// SPDX-License-Identifier: Apache-2.0
/// \file
/// Datasets as random-access ranges: the files of a folder, an image folder with one subfolder
/// per class, the lines of a list file. Each is listed once, in an order that is the same on
/// every machine, so that `ferry::from(dataset, ferry::sampling{...})` gives every rank the same
/// permutation.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ferry/export.hpp"

namespace ferry::sources {

/// Which files `ferry::sources::files` lists.
struct files_options {
    /// Endings to keep, e.g. `{".jpg", ".png"}`, compared case-insensitively with the end of the
    /// file name (so `.JPG` matches `.jpg`, and `.tar.gz` works); a missing leading dot is added
    /// (`"jpg"` means `".jpg"`). Empty: every regular file.
    std::vector<std::string> extensions{};
    /// Also list the files of subfolders, at any depth. Symbolic links to files are listed;
    /// links to folders are not followed.
    bool recursive = false;
};

/// The regular files under `dir` (by `options`), sorted by path (`std::filesystem::path`'s
/// order, component by component), so that the order is the same on every machine. Throws
/// `ferry::io_error` naming `dir` when it is missing, not a folder or cannot be read.
/// \code
///   auto files = ferry::sources::files("data", {.extensions = {".jpg", ".png"}, .recursive =
///   true}); auto pipe = ferry::from(files, ferry::sampling{.shuffle = true, .seed = 1})
///                   .map(ferry::ops::read_file, {.concurrency = 4, .executor = ferry::io})
///                   .build();
/// \endcode
[[nodiscard]] FERRY_API std::vector<std::filesystem::path> files(const std::filesystem::path& dir,
                                                                 const files_options& options = {});

/// One file of an image folder and its class. Its `path` names it in failure records
/// (`ferry::describable`).
struct labelled_file {
    std::filesystem::path path{};  ///< the file
    int label = 0;                 ///< its class: an index into `labelled_files::classes()`

    /// Member-wise equality.
    friend bool operator==(const labelled_file&, const labelled_file&) = default;
};

/// The files of an image folder with their labels: a random-access range of `labelled_file`
/// (and so a source for `ferry::from(range, sampling)`), plus the class names.
class labelled_files {
  public:
    /// An iterator over the files (random access, read-only).
    using const_iterator = std::vector<labelled_file>::const_iterator;

    labelled_files() = default;
    /// Files (labels index into `classes`) and class names, as listed.
    labelled_files(std::vector<labelled_file> files, std::vector<std::string> classes)
        : files_(std::move(files)), classes_(std::move(classes)) {}

    /// How many files.
    [[nodiscard]] std::size_t size() const noexcept { return files_.size(); }
    /// Whether there are none.
    [[nodiscard]] bool empty() const noexcept { return files_.empty(); }
    /// The `i`-th file (no bounds check).
    [[nodiscard]] const labelled_file& operator[](std::size_t i) const { return files_[i]; }
    /// The first file.
    [[nodiscard]] const_iterator begin() const noexcept { return files_.begin(); }
    /// Past the last file.
    [[nodiscard]] const_iterator end() const noexcept { return files_.end(); }
    /// The class names, sorted: `classes()[f.label]` is `f`'s class.
    [[nodiscard]] const std::vector<std::string>& classes() const noexcept { return classes_; }

  private:
    std::vector<labelled_file> files_;
    std::vector<std::string> classes_;
};

/// Which files `ferry::sources::image_folder` lists in each class folder.
struct image_folder_options {
    /// Endings to keep, as in `files_options::extensions`. Empty: every regular file.
    std::vector<std::string> extensions{};
    /// Also list the files of a class folder's subfolders (they belong to the same class).
    bool recursive = true;
};

/// An image folder, `dir/<class>/<file>` (torchvision's ImageFolder layout): the classes are
/// the subfolders of `dir`, sorted by name (each one a class, even if empty; files directly in
/// `dir` are ignored), and the files are those of each class folder (see `files`), class by
/// class, each class's files sorted by path. Throws `ferry::io_error` naming `dir` when it is
/// missing, not a folder or cannot be read.
/// \code
///   auto train = ferry::sources::image_folder("data/train");
///   std::cout << train.size() << " images, " << train.classes().size() << " classes\n";
///   auto pipe = ferry::from(train, ferry::sampling{.shuffle = true, .seed = 42})
///                   .map([](const ferry::sources::labelled_file& f) {
///                       return std::pair{ferry::ops::read_file(f.path), f.label};
///                   }, {.concurrency = 4, .executor = ferry::io})
///                   .build();
/// \endcode
[[nodiscard]] FERRY_API labelled_files image_folder(const std::filesystem::path& dir,
                                                    const image_folder_options& options = {});

/// The lines of a text file (e.g. a list of URLs or paths), in file order: a trailing `\r` is
/// removed (CRLF files), and blank lines (empty or only spaces and tabs) are skipped; other lines
/// are kept as they are. Throws `ferry::io_error` naming `path` when it cannot be read.
/// \code
///   auto urls = ferry::sources::lines("list.txt");
///   auto pipe = ferry::from(urls, ferry::sampling{.shuffle = true, .seed = 3})
///                   .map(ferry::ops::read_url, {.concurrency = 64, .executor = ferry::io})
///                   .build();
/// \endcode
[[nodiscard]] FERRY_API std::vector<std::string> lines(const std::filesystem::path& path);

}  // namespace ferry::sources
