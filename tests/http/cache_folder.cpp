// SPDX-License-Identifier: Apache-2.0
/// \file
/// The cache folder against other local users: the modes of what open_cache creates (private,
/// or shared with a group), folders it must refuse (another owner, writable by others, under a
/// parent others can write or through another user's link), entries of another user, a FIFO
/// planted at an entry's path, and the folder's lock held by someone else. Each read that could
/// block runs under a watchdog that unblocks it after a while and fails the case, so a hang is
/// a failure, not a stuck suite.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdio>
#include <ferry/cache.hpp>
#include <ferry/http.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>

#include "../support/expect.hpp"
#include "../support/skipped.hpp"
#include "cache_support.hpp"

using ferry_test::as_string;
using ferry_test::files_in;
using ferry_test::object_server;
using ferry_test::random_body;
using ferry_test::read;
using ferry_test::served;
using ferry_test::temp_files_in;
using ferry_test::temp_folder;

namespace cache_folder_test {

/// The permission bits of `p` (setgid included).
unsigned mode_of(const std::filesystem::path& p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return st.st_mode & 07777U;
}

/// A bound on a call that must not block: generous on a loaded machine, short enough that a hang
/// fails the case in the suite's time.
constexpr auto watchdog = std::chrono::seconds(30);

/// Runs `f` on a thread and waits up to `watchdog` for it. When it has not returned by then,
/// `unblock` runs (it must make `f` return), the case fails naming `what`, and false is returned.
bool returns_in_time(const std::function<void()>& f, const std::function<void()>& unblock,
                     const std::string& what) {
    auto done = std::async(std::launch::async, f);
    if (done.wait_for(watchdog) == std::future_status::ready) {
        done.get();
        return true;
    }
    unblock();
    done.wait();
    BOOST_ERROR(what << " blocked: still waiting after the watchdog's "
                     << std::chrono::duration_cast<std::chrono::seconds>(watchdog).count() << " s");
    return false;
}

/// The precondition of the cases that plant files of another user: this process, not itself
/// uid 65534 (the other user of these cases), must be able to give a file to uid and gid 65534
/// (root, or CAP_CHOWN). Where not, the case is reported skipped with the reason, and the reason
/// is printed on stdout (ctest's output shows it).
boost::test_tools::assertion_result can_give_files_away(boost::unit_test::test_unit_id id) {
    const auto me = ::geteuid();
    std::string why;
    if (me == 65534) {
        why = "this process runs as uid 65534, the other user whose files the case plants";
    } else {
        const temp_folder probe("ferry-cache-chown-probe");
        const auto file = probe / "probe";
        { std::ofstream(file) << "x"; }
        if (::chown(file.c_str(), 65534, 65534) == 0) return true;
        why = "this process (uid " + std::to_string(me) +
              ") cannot give a file to uid 65534: the case needs root (or CAP_CHOWN)";
    }
    return ferry_test::skipped(id, why);
}

}  // namespace cache_folder_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(cache)
using namespace cache_folder_test;

// A private cache is this user's alone: the folder open_cache creates is 0700, and its lock
// file, entries and temporary files are 0600, whatever the umask allows.
BOOST_AUTO_TEST_CASE(a_new_folder_and_its_files_are_private) {
    temp_folder root("ferry-cache-private");
    object_server s;
    const std::string body = random_body(5000, 41);
    s.put("/p", body);
    const auto dir = root / "cache";
    const mode_t old_umask = ::umask(0);  // a umask that would let everyone in
    const auto cache = ferry::ops::open_cache({.dir = dir});
    ::umask(old_umask);
    BOOST_TEST(read(s.url("/p"), cache) == body);
    BOOST_TEST(mode_of(dir) == 0700U, std::oct << mode_of(dir));
    BOOST_TEST(mode_of(dir / ".lock") == 0600U, std::oct << mode_of(dir / ".lock"));
    const auto entry = cache->entry_path(s.url("/p"));
    BOOST_TEST(mode_of(entry) == 0600U, std::oct << mode_of(entry));
}

// A folder that others may write (0777) is refused with an io_error naming the folder, its mode
// and the fix, even for a cache shared on purpose.
BOOST_AUTO_TEST_CASE(a_folder_others_can_write_is_refused) {
    temp_folder root("ferry-cache-refused");
    const auto open = root / "open";
    std::filesystem::create_directories(open);
    ::chmod(open.c_str(), 0777);
    const auto e = ferry_test::expect_throw<ferry::io_error>(
        [&] { (void)ferry::ops::open_cache({.dir = open}); });
    BOOST_TEST(e.what().find("open_cache: '" + open.string() + "'") != std::string::npos, e.what());
    BOOST_TEST(e.what().find("writable by group or others (mode 0777)") != std::string::npos,
               e.what());
    BOOST_TEST(e.what().find("chmod 700") != std::string::npos, e.what());
    BOOST_TEST(e.what().find("cache_options::shared_group") != std::string::npos, e.what());
    BOOST_TEST(!std::filesystem::exists(open / ".lock"), "the refused folder was written to");
    // Writable by others is refused even for a group-shared cache.
    const auto shared = ferry_test::expect_throw<ferry::io_error>(
        [&] { (void)ferry::ops::open_cache({.dir = open, .shared_group = true}); });
    BOOST_TEST(shared.what().find("writable by others (mode 0777)") != std::string::npos,
               shared.what());
    BOOST_TEST(shared.what().find("chmod 2770") != std::string::npos, shared.what());
}

// A folder owned by another user (uid 65534) is refused with an io_error naming the folder, its
// owner and this user, and the fix (root only: the folder is given away with chown).
BOOST_AUTO_TEST_CASE(a_folder_another_user_owns_is_refused,
                     *boost::unit_test::precondition(can_give_files_away)) {
    temp_folder root("ferry-cache-theirs");
    const auto theirs = root / "theirs";
    std::filesystem::create_directories(theirs);
    ::chmod(theirs.c_str(), 0700);
    BOOST_TEST_REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    const auto owned = ferry_test::expect_throw<ferry::io_error>(
        [&] { (void)ferry::ops::open_cache({.dir = theirs}); });
    BOOST_TEST(owned.what().find("open_cache: '" + theirs.string() + "'") != std::string::npos,
               owned.what());
    BOOST_TEST(owned.what().find("belongs to uid 65534, not to this user (uid " +
                                 std::to_string(::geteuid()) + ")") != std::string::npos,
               owned.what());
    BOOST_TEST(owned.what().find("cache_options::shared_group") != std::string::npos, owned.what());
}

// A folder whose parent other users can write (0777, not sticky) is refused at open, with an
// io_error naming the folder, the parent, its owner and mode, and the fix, and nothing is made
// there. A sticky parent (1777, as /tmp is) is accepted; a group-writable one only for a cache
// shared with that group.
BOOST_AUTO_TEST_CASE(a_folder_under_a_parent_others_can_write_is_refused) {
    temp_folder root("ferry-cache-parent");
    object_server s;
    s.put("/p", random_body(3000, 46));
    const std::string me = std::to_string(::geteuid());
    const auto open = root / "open";
    std::filesystem::create_directories(open);
    ::chmod(open.c_str(), 0777);
    const auto e = ferry_test::expect_throw<ferry::io_error>(
        [&] { (void)ferry::ops::open_cache({.dir = open / "cache"}); });
    BOOST_TEST(
        e.what().find("open_cache: '" + (open / "cache").string() + "'") != std::string::npos,
        e.what());
    BOOST_TEST(e.what().find("the folder '" + open.string() + "' on its path (owner uid " + me +
                             ", mode 0777) is writable by other users") != std::string::npos,
               e.what());
    BOOST_TEST(e.what().find("chmod go-w '" + open.string() + "'") != std::string::npos, e.what());
    BOOST_TEST(!std::filesystem::exists(open / "cache"), "the refused folder was made");

    const auto sticky = root / "sticky";
    std::filesystem::create_directories(sticky);
    ::chmod(sticky.c_str(), 01777);
    BOOST_TEST(read(s.url("/p"), ferry::ops::open_cache({.dir = sticky / "cache"})) ==
               random_body(3000, 46));

    const auto team = root / "team";  // group-writable, of this process's group
    std::filesystem::create_directories(team);
    ::chmod(team.c_str(), 0775);
    BOOST_TEST(ferry::ops::open_cache({.dir = team / "shared", .shared_group = true}) != nullptr);
    const auto group = ferry_test::expect_throw<ferry::io_error>(
        [&] { (void)ferry::ops::open_cache({.dir = team / "private"}); });
    BOOST_TEST(group.what().find("the folder '" + team.string() + "' on its path (owner uid " + me +
                                 ", mode 0775) is writable by other users") != std::string::npos,
               group.what());
}

// A folder under a parent of another user (uid 65534) is refused at open, naming the parent and
// its owner, and nothing is made there (root only: the parent is given away with chown).
BOOST_AUTO_TEST_CASE(a_folder_under_a_parent_of_another_user_is_refused,
                     *boost::unit_test::precondition(can_give_files_away)) {
    temp_folder root("ferry-cache-their-parent");
    const auto theirs = root / "theirs";
    std::filesystem::create_directories(theirs);
    ::chmod(theirs.c_str(), 0755);
    BOOST_TEST_REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    const auto owned = ferry_test::expect_throw<ferry::io_error>(
        [&] { (void)ferry::ops::open_cache({.dir = theirs / "cache"}); });
    BOOST_TEST(
        owned.what().find("the folder '" + theirs.string() +
                          "' on its path (owner uid 65534, mode 0755) belongs to another user") !=
            std::string::npos,
        owned.what());
    BOOST_TEST(!std::filesystem::exists(theirs / "cache"), "the refused folder was made");
}

// A link on the folder's path that another user owns (uid 65534) is refused at open, naming the
// link: its owner could point the cache at any folder. A link of this user's is followed once,
// at open (cache_race.cpp). Root only: the link is given away with lchown.
BOOST_AUTO_TEST_CASE(a_link_of_another_user_on_the_path_is_refused,
                     *boost::unit_test::precondition(can_give_files_away)) {
    temp_folder root("ferry-cache-their-link");
    std::filesystem::create_directories(root / "mine");
    std::filesystem::create_directory_symlink(root / "mine", root / "link");
    BOOST_TEST_REQUIRE(::lchown((root / "link").c_str(), 65534, 65534) == 0);
    const auto e = ferry_test::expect_throw<ferry::io_error>(
        [&] { (void)ferry::ops::open_cache({.dir = root / "link" / "cache"}); });
    BOOST_TEST(e.what().find("'" + (root / "link").string() +
                             "' is a symbolic link of uid 65534") != std::string::npos,
               e.what());
    BOOST_TEST(!std::filesystem::exists(root / "mine" / "cache"), "the link was followed");
}

// An entry owned by another user (uid 65534) in a private cache is never served: the read is a
// miss, counted as an invalid entry, the object is fetched again, and the entry that replaces
// the planted one is this user's. Root only: the entry is given away with chown.
BOOST_AUTO_TEST_CASE(an_entry_of_another_user_is_not_served,
                     *boost::unit_test::precondition(can_give_files_away)) {
    temp_folder dir("ferry-cache-foreign");
    object_server s;
    const std::string body = random_body(5000, 47);
    s.put("/o", body);
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const auto entry = ferry_test::plant_entry(s, "/o", dir.path(), "POISONED-BY-UID-65534");
    BOOST_TEST_REQUIRE(::chown(entry.c_str(), 65534, 65534) == 0);
    const std::string got = read(s.url("/o"), cache);
    BOOST_TEST((got == body), served(got));
    const auto st = cache->stats();
    BOOST_TEST(st.hits == 0U);
    BOOST_TEST(st.misses == 1U);
    BOOST_TEST(st.invalid_entries == 1U);
    BOOST_TEST(s.gets.load() == 2, "GETs: the plant and the fill");
    struct stat now {};
    BOOST_TEST_REQUIRE(::stat(entry.c_str(), &now) == 0);
    BOOST_TEST(now.st_uid == ::geteuid());
    BOOST_TEST(ferry_test::file_text(entry).starts_with(body));
    BOOST_TEST(read(s.url("/o"), cache) == body);
    BOOST_TEST(cache->stats().hits == 1U);
}

// In a group-shared cache an entry that others could write (mode 0666) is never served: a miss,
// counted as an invalid entry, fetched again, and the entry that replaces it is 0660.
BOOST_AUTO_TEST_CASE(a_shared_entry_others_could_write_is_not_served) {
    temp_folder root("ferry-cache-shared-foreign");
    object_server s;
    const std::string body = random_body(4000, 48);
    s.put("/w", body);
    const auto dir = root / "cache";
    const auto cache = ferry::ops::open_cache({.dir = dir, .shared_group = true});
    const auto writable = ferry_test::plant_entry(s, "/w", dir, "POISONED-BY-OTHERS", true);
    BOOST_TEST_REQUIRE(::chmod(writable.c_str(), 0666) == 0);
    const std::string got = read(s.url("/w"), cache);
    BOOST_TEST((got == body), served(got));
    BOOST_TEST(cache->stats().invalid_entries == 1U);
    BOOST_TEST(mode_of(writable) == 0660U, std::oct << mode_of(writable));
    BOOST_TEST(s.gets.load() == 2, "GETs: the plant and the fill");
}

// In a group-shared cache an entry of another group than the folder's (gid 65534) is never
// served: a miss, counted as an invalid entry, fetched again (root only: the entry is given
// to that group with chown).
BOOST_AUTO_TEST_CASE(a_shared_entry_of_another_group_is_not_served,
                     *boost::unit_test::precondition(can_give_files_away)) {
    temp_folder root("ferry-cache-shared-group");
    object_server s;
    const std::string body = random_body(4000, 48);
    s.put("/g", body + "g");
    const auto dir = root / "cache";
    const auto cache = ferry::ops::open_cache({.dir = dir, .shared_group = true});
    const auto other_group = ferry_test::plant_entry(s, "/g", dir, "POISONED-BY-GID-65534", true);
    BOOST_TEST_REQUIRE(::chown(other_group.c_str(), static_cast<uid_t>(-1), 65534) == 0);
    const std::string again = read(s.url("/g"), cache);
    BOOST_TEST((again == body + "g"), served(again));
    BOOST_TEST(cache->stats().invalid_entries == 1U);
    BOOST_TEST(s.gets.load() == 2, "GETs: the plant and the fill");
}

// A group-shared cache: the folder open_cache creates is 2770 and its files 0660.
BOOST_AUTO_TEST_CASE(a_shared_group_cache_is_2770_with_0660_files) {
    temp_folder root("ferry-cache-shared");
    object_server s;
    const std::string body = random_body(5000, 42);
    s.put("/g", body);
    const auto dir = root / "cache";
    const auto cache = ferry::ops::open_cache({.dir = dir, .shared_group = true});
    BOOST_TEST(read(s.url("/g"), cache) == body);
    BOOST_TEST(mode_of(dir) == 02770U, std::oct << mode_of(dir));
    BOOST_TEST(mode_of(dir / ".lock") == 0660U, std::oct << mode_of(dir / ".lock"));
    BOOST_TEST(mode_of(cache->entry_path(s.url("/g"))) == 0660U);
}

// A group-shared folder of another owner (uid 65534), shared with this process's group, is
// accepted and works: a read of what it holds is a hit (root only: the folder is given away
// with chown).
BOOST_AUTO_TEST_CASE(a_shared_folder_of_another_owner_in_this_group_works,
                     *boost::unit_test::precondition(can_give_files_away)) {
    temp_folder root("ferry-cache-shared-theirs");
    object_server s;
    const std::string body = random_body(5000, 42);
    s.put("/g", body);
    const auto dir = root / "cache";
    const auto cache = ferry::ops::open_cache({.dir = dir, .shared_group = true});
    BOOST_TEST(read(s.url("/g"), cache) == body);
    BOOST_TEST_REQUIRE(::chown(dir.c_str(), 65534, ::getegid()) == 0);
    const auto other = ferry::ops::open_cache({.dir = dir, .shared_group = true});
    BOOST_TEST(read(s.url("/g"), other) == body);
    BOOST_TEST(other->stats().hits == 1U);
}

// A FIFO planted at an entry's path is no entry: the read does not block on it, it is a miss
// (counted once as an invalid entry), the object is fetched, and a regular entry replaces the
// FIFO; a symbolic link planted there is not followed, and replaced the same way.
BOOST_AUTO_TEST_CASE(a_fifo_at_an_entry_path_is_a_miss_not_a_hang) {
    temp_folder dir("ferry-cache-fifo");
    object_server s;
    const std::string body = random_body(8000, 43);
    s.put("/f", body);
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const auto entry = cache->entry_path(s.url("/f"));
    BOOST_TEST_REQUIRE(::mkfifo(entry.c_str(), 0600) == 0);
    std::string got;
    const bool in_time = returns_in_time([&] { got = read(s.url("/f"), cache); },
                                         [&] {
                                             // A writer that comes and goes lets the open end.
                                             const int w =
                                                 ::open(entry.c_str(), O_WRONLY | O_NONBLOCK);
                                             if (w >= 0) ::close(w);
                                         },
                                         "read_url of an entry that is a FIFO");
    BOOST_TEST(in_time);
    BOOST_TEST(got == body);
    const auto st = cache->stats();
    BOOST_TEST(st.misses == 1U);
    BOOST_TEST(st.invalid_entries == 1U);
    BOOST_TEST(std::filesystem::is_regular_file(entry));
    BOOST_TEST(read(s.url("/f"), cache) == body);
    BOOST_TEST(s.gets.load() == 1);
    std::filesystem::remove(entry);
    std::filesystem::create_symlink(dir / "elsewhere", entry);
    BOOST_TEST(read(s.url("/f"), cache) == body);
    BOOST_TEST(cache->stats().invalid_entries == 2U);
    BOOST_TEST(std::filesystem::is_regular_file(std::filesystem::symlink_status(entry)));
    BOOST_TEST(!std::filesystem::exists(dir / "elsewhere"));
}

// Someone else holding the folder's lock (flock on `.lock`, here from another open of it) cannot
// stall the cache: opening it and a fill give up after lock_wait, the read still returns the
// object's bytes, nothing is kept, and lock_timeouts counts both; once the lock is free, the
// next read is kept.
BOOST_AUTO_TEST_CASE(a_held_lock_does_not_block_fills) {
    temp_folder dir("ferry-cache-locked");
    object_server s;
    const std::string body = random_body(20000, 44);
    s.put("/l", body);
    (void)ferry::ops::open_cache({.dir = dir.path()});  // creates the folder and its lock file
    const int holder = ::open((dir / ".lock").c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_TEST_REQUIRE(holder >= 0);
    BOOST_TEST_REQUIRE(::flock(holder, LOCK_EX) == 0);
    std::shared_ptr<ferry::object_cache> cache;
    std::string got;
    const bool in_time = returns_in_time(
        [&] {
            cache = ferry::ops::open_cache(
                {.dir = dir.path(), .lock_wait = std::chrono::milliseconds(200)});
            got = read(s.url("/l"), cache);
        },
        [&] { ::flock(holder, LOCK_UN); }, "open_cache and read_url with the lock held");
    BOOST_TEST(in_time);
    BOOST_TEST(got == body);
    BOOST_REQUIRE(cache != nullptr);
    BOOST_TEST(cache->stats().lock_timeouts == 2U);
    BOOST_TEST(files_in(dir.path()).empty(), "kept: " << files_in(dir.path()).size());
    ::flock(holder, LOCK_UN);
    ::close(holder);
    BOOST_TEST(read(s.url("/l"), cache) == body);
    BOOST_TEST(std::filesystem::exists(cache->entry_path(s.url("/l"))));
    BOOST_TEST(temp_files_in(dir.path()).empty());
    BOOST_TEST(cache->stats().lock_timeouts == 2U);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
