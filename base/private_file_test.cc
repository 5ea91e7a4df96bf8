// Tests of the safe opening of the files slurmsweep writes: a planted link, FIFO, device or hard
// link is refused and what it points at keeps its bytes and mode; temporary names are not guessable.
#include "base/private_file.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>

#include "base/atomic_file.h"
#include "tests/test_util.h"

namespace sweep {
namespace {

namespace fs = std::filesystem;

mode_t ModeOf(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("OpenPrivateFile refuses a planted symbolic link in every mode and leaves its target alone",
          "[private_file]") {
  testing::TempDir dir;
  testing::Victim victim(dir.file("victim"));
  std::string link = dir.file("study.db.pid");
  REQUIRE(::symlink(victim.path.c_str(), link.c_str()) == 0);
  for (PrivateOpen how : {PrivateOpen::kReadWrite, PrivateOpen::kTruncate, PrivateOpen::kAppend}) {
    auto fd = OpenPrivateFile(link, how, 0600);
    REQUIRE_FALSE(fd.ok());
    CHECK_THAT(fd.status().message(), Catch::Contains(link + " is a symbolic link"));
    CHECK(victim.Untouched());
  }
  // A dangling link (to a file that does not exist yet) is not followed either: nothing is created.
  std::string dangling = dir.file("study.db.log");
  REQUIRE(::symlink(dir.file("created-through-link").c_str(), dangling.c_str()) == 0);
  CHECK_FALSE(OpenPrivateFile(dangling, PrivateOpen::kAppend).ok());
  CHECK_FALSE(fs::exists(dir.file("created-through-link")));
}

TEST_CASE("OpenPrivateFile refuses a FIFO, a device, a directory and a hard link, without blocking", "[private_file]") {
  testing::TempDir dir;
  std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto f = OpenPrivateFile(fifo, PrivateOpen::kAppend);  // would block forever without O_NONBLOCK
  REQUIRE_FALSE(f.ok());
  CHECK_THAT(f.status().message(), Catch::Contains("FIFO"));
  auto dev = OpenPrivateFile("/dev/null", PrivateOpen::kReadWrite);
  REQUIRE_FALSE(dev.ok());
  CHECK_THAT(dev.status().message(), Catch::Contains("/dev/null is a device, not a regular file"));
  CHECK_FALSE(OpenPrivateFile(dir.path().string(), PrivateOpen::kReadWrite).ok());

  testing::Victim victim(dir.file("victim"));
  std::string hard = dir.file("study.db.lock");
  REQUIRE(::link(victim.path.c_str(), hard.c_str()) == 0);
  auto h = OpenPrivateFile(hard, PrivateOpen::kTruncate);
  REQUIRE_FALSE(h.ok());
  CHECK_THAT(h.status().message(), Catch::Contains("hard link"));
  CHECK(victim.Untouched());
}

TEST_CASE("OpenPrivateFile creates 0600 whatever the umask, and makes an existing file private by fchmod",
          "[private_file]") {
  testing::TempDir dir;
  mode_t old = ::umask(0);
  auto fresh = OpenPrivateFile(dir.file("new.log"), PrivateOpen::kAppend);
  ::umask(old);
  REQUIRE(fresh.ok());
  CHECK(ModeOf(dir.file("new.log")) == 0600);
  testing::WriteAll(dir.file("old.pid"), "123\n");
  ::chmod(dir.file("old.pid").c_str(), 0644);
  auto existing = OpenPrivateFile(dir.file("old.pid"), PrivateOpen::kTruncate);
  REQUIRE(existing.ok());
  CHECK(ModeOf(dir.file("old.pid")) == 0600);
  CHECK(testing::ReadAll(dir.file("old.pid")).empty());
}

TEST_CASE("AtomicFile never writes through a file planted at the old guessable temporary name", "[private_file]") {
  testing::TempDir dir;
  testing::Victim victim(dir.file("victim"));
  std::string report = dir.file("report.html");
  // The names slurmsweep used before: REPORT.tmp-PID.
  std::string guessed = report + ".tmp-" + std::to_string(::getpid());
  REQUIRE(::symlink(victim.path.c_str(), guessed.c_str()) == 0);
  REQUIRE(WriteFileAtomically(report, "<html>new</html>").ok());
  CHECK(victim.Untouched());
  CHECK(testing::ReadAll(report) == "<html>new</html>");
  CHECK(fs::is_symlink(guessed));  // still the planted link, still pointing at the victim
}

TEST_CASE("AtomicFile replaces a link planted at the final name, never its target", "[private_file]") {
  testing::TempDir dir;
  testing::Victim victim(dir.file("victim"));
  std::string csv = dir.file("trials.csv");
  REQUIRE(::symlink(victim.path.c_str(), csv.c_str()) == 0);
  REQUIRE(WriteFileAtomically(csv, "trial,lr\n").ok());
  CHECK(victim.Untouched());
  CHECK_FALSE(fs::is_symlink(csv));
  CHECK(testing::ReadAll(csv) == "trial,lr\n");
}

TEST_CASE("AtomicFile follows the umask unless given a mode, and leaves no temporary file", "[private_file]") {
  testing::TempDir dir;
  for (mode_t mask : {mode_t(022), mode_t(077), mode_t(027)}) {
    mode_t old = ::umask(mask);
    Status st = WriteFileAtomically(dir.file("r.html"), "x");
    ::umask(old);
    REQUIRE(st.ok());
    CHECK(ModeOf(dir.file("r.html")) == (0666 & ~mask));
  }
  {
    AtomicFile exact(dir.file("exact"), 0640);
    exact.Append("y");
    REQUIRE(exact.Commit().ok());
  }
  CHECK(ModeOf(dir.file("exact")) == 0640);
  { AtomicFile abandoned(dir.file("never")); }
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path())) names.insert(e.path().filename().string());
  CHECK(names == std::set<std::string>{"exact", "r.html"});
}

TEST_CASE("temporary names are random: many draws, no repeats, 16 hex digits", "[private_file]") {
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) {
    std::string s = RandomHexSuffix();
    REQUIRE(s.size() == 16);
    REQUIRE(s.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(s);
  }
  CHECK(seen.size() == 10000);
}

TEST_CASE("OpenPrivateFile on random paths: what is not a fresh or own regular file is refused (property)",
          "[private_file]") {
  // Each round plants one kind of object at the path (or none) and checks the invariant: success
  // exactly when the path held nothing or a regular file of ours with one name.
  testing::TempDir dir;
  testing::Victim victim(dir.file("victim"));
  std::mt19937 rng(45);
  for (int round = 0; round < 200; ++round) {
    std::string path = dir.file("f" + std::to_string(round));
    int kind = static_cast<int>(rng() % 5);
    if (kind == 1) testing::WriteAll(path, "mine");
    if (kind == 2) REQUIRE(::symlink(victim.path.c_str(), path.c_str()) == 0);
    if (kind == 3) REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    if (kind == 4) REQUIRE(::mkdir(path.c_str(), 0700) == 0);
    auto how = static_cast<PrivateOpen>(rng() % 3);
    auto fd = OpenPrivateFile(path, how);
    INFO("round " << round << " kind " << kind);
    CHECK(fd.ok() == (kind <= 1));
    CHECK(victim.Untouched());
  }
}

}  // namespace sweep
