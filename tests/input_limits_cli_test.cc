// Limits at every door, through the built binary: a study file that is not a regular file or is
// too large, a database that is not a regular file path, study names "." and "..", and `metrics`
// on a log with a 1 GiB line (memory measured as the child's peak RSS). Tagged [cli].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "logs/log_summary.h"
#include "study/loader.h"
#include "study/names.h"
#include "tests/test_util.h"

extern char** environ;

using namespace sweep;

namespace {

namespace fs = std::filesystem;

const std::string kBinary = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";

std::pair<int, std::string> Shell(const std::string& cmd) { return testing::RunShell(cmd + " 2>&1"); }

// Runs the binary with `args`, output to `out_path`; its exit code and peak resident memory in KiB
// (wait4's rusage of that child alone).
std::pair<int, long> RunMeasured(const std::vector<std::string>& args, const std::string& out_path) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(kBinary.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, kBinary.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  int status = 0;
  struct rusage usage {};
  REQUIRE(::wait4(pid, &status, 0, &usage) == pid);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, usage.ru_maxrss};
}

}  // namespace

TEST_CASE("plan refuses a study file that is a device or a FIFO, without reading or waiting", "[cli]") {
  testing::TempDir dir;
  auto [rc, out] = Shell(kBinary + " plan /dev/zero");
  INFO(out);
  CHECK(rc != 0);
  CHECK_THAT(out, Catch::Contains("study file /dev/zero is not a regular file"));
  std::string fifo = dir.file("study.toml");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever opens the FIFO: before the fix this blocked forever.
  auto [frc, fout] = Shell(kBinary + " plan " + fifo);
  INFO(fout);
  CHECK(frc != 0);
  CHECK_THAT(fout, Catch::Contains("study file " + fifo + " is not a regular file"));
}

TEST_CASE("a study file over the documented size is refused with its size and the limit", "[cli]") {
  testing::TempDir dir;
  std::string path = testing::WriteLocalStudyFile(dir, "big", "true", "[space]\nlr = [0.1]\n");
  // Valid TOML that only grows: a comment past the limit.
  ::truncate(path.c_str(), static_cast<off_t>(study::kMaxStudyFileBytes + 1));
  auto loaded = study::LoadStudy(path);
  REQUIRE_FALSE(loaded.ok());
  CHECK_THAT(loaded.status().message(),
             Catch::Contains(fmt::format("more than the limit of {} (16 MiB)", study::kMaxStudyFileBytes)));
  ::truncate(path.c_str(), static_cast<off_t>(study::kMaxStudyFileBytes));  // at the limit: read (and parsed)
  auto at_limit = study::LoadStudy(path);
  if (!at_limit.ok()) CHECK_THAT(at_limit.status().message(), !Catch::Contains("limit"));
}

TEST_CASE("database must be a regular file path: /dev/full, a folder or a link are refused, nothing created", "[cli]") {
  testing::TempDir dir;
  fs::create_directories(dir.file("dbdir"));
  REQUIRE(::symlink(dir.file("elsewhere.db").c_str(), dir.file("link.db").c_str()) == 0);
  for (auto [db, what] : std::vector<std::pair<std::string, std::string>>{{"/dev/full", "a device, FIFO or socket"},
                                                                          {dir.file("dbdir"), "a folder"},
                                                                          {dir.file("link.db"), "a symbolic link"}}) {
    DYNAMIC_SECTION(what) {  // not the path: a TempDir's differs on every pass of the test case
      std::string path = testing::WriteLocalStudyFile(dir, "dbcheck", "true", "[space]\nlr = [0.1]\n");
      std::string text = testing::ReadAll(path);
      text.replace(text.find("name = \"dbcheck\""), 16, fmt::format("name = \"dbcheck\"\ndatabase = \"{}\"", db));
      testing::WriteAll(path, text);
      auto [rc, out] = Shell(kBinary + " run " + path);
      INFO(out);
      CHECK(rc != 0);
      CHECK_THAT(out, Catch::Contains(fmt::format("{}:3: key 'study.database': {} is {}", path, db, what)));
    }
  }
  CHECK_FALSE(fs::exists("/dev/full.lock"));
  CHECK_FALSE(fs::exists(dir.file("elsewhere.db")));
}

TEST_CASE("study names '.' and '..' are refused where the name is read, with the rule", "[cli]") {
  testing::TempDir dir;
  for (const char* name : {".", ".."}) {
    std::string path = testing::WriteLocalStudyFile(dir, name, "true", "[space]\nlr = [0.1]\n");
    auto [rc, out] = Shell(kBinary + " plan " + path);
    INFO(out);
    CHECK(rc != 0);
    CHECK_THAT(out, Catch::Contains(path + ":2: key 'study.name'"));
    CHECK_THAT(out, Catch::Contains("not '.' or '..' alone"));
  }
  // Names with dots that are not a path step stay allowed.
  for (const char* name : {"...", ".hidden", "v1.2", "a..b"}) {
    std::string path = testing::WriteLocalStudyFile(dir, name, "true", "[space]\nlr = [0.1]\n");
    auto loaded = study::LoadStudy(path);
    INFO(name << ": " << (loaded.ok() ? "" : loaded.status().message()));
    CHECK(loaded.ok());
  }
}

TEST_CASE("metrics on a log with a 1 GiB line stays under 100 MB and reads the lines after it", "[cli]") {
  testing::TempDir dir;
  std::string log = dir.file("huge.log");
  {
    // A sparse file: 1 GiB of NUL bytes without a line break costs no disk, and is read like any line.
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, off_t(1) << 30) == 0);
    std::string tail = "\n{\"step\": 10, \"lm_loss\": 2.5}\n{\"step\": 20, \"lm_loss\": 2.25}\n";
    REQUIRE(::pwrite(fd, tail.data(), tail.size(), off_t(1) << 30) == static_cast<ssize_t>(tail.size()));
    ::close(fd);
  }
  auto [rc, maxrss_kib] = RunMeasured({"metrics", log, "--format", "jsonl"}, dir.file("out.txt"));
  std::string out = testing::ReadAll(dir.file("out.txt"));
  INFO(out << "\npeak RSS " << maxrss_kib << " KiB");
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("lm_loss"));
  CHECK(maxrss_kib < 100 * 1024);
}

TEST_CASE("the streamed summary equals the whole-text one for any split of the log (property)", "[cli]") {
  // The chunk boundaries `metrics` reads at must not change what it reports.
  std::mt19937 rng(4545);
  std::string text;
  for (int i = 0; i < 300; ++i) {
    switch (rng() % 4) {
      case 0:
        text += fmt::format("{{\"step\": {}, \"lm_loss\": {}}}\n", i, 3.0 - i * 0.001);
        break;
      case 1:
        text += "banner line\n";
        break;
      case 2:
        text += "{\"step\": broken\n";
        break;
      default:
        text += std::string(rng() % 3000, 'x') + "\n";
    }
  }
  text += "{\"step\": 999, \"lm_l";  // a partial last line
  logs::LogSummary whole = logs::SummarizeLog(text, MetricFormat::kJsonLines);
  for (int round = 0; round < 50; ++round) {
    logs::LogSummarizer s(MetricFormat::kJsonLines);
    for (size_t pos = 0; pos < text.size();) {
      size_t n = std::min<size_t>(text.size() - pos, 1 + rng() % 5000);
      s.Feed(std::string_view(text).substr(pos, n));
      pos += n;
    }
    logs::LogSummary parts = s.Finish();
    CHECK(parts.lines == whole.lines);
    CHECK(parts.points == whole.points);
    CHECK(parts.malformed_lines == whole.malformed_lines);
    CHECK(parts.partial_last_line == whole.partial_last_line);
  }
}

TEST_CASE("a name is safe exactly when it is one path step of the safe alphabet (property)", "[cli]") {
  // Short random strings over the alphabet plus '/' and a space hit ".", "..", "a/b" and "" often.
  const std::string chars = "a.-_/ Z9";
  std::mt19937 rng(45);
  for (int round = 0; round < 5000; ++round) {
    std::string name(rng() % 4, ' ');
    for (char& c : name) c = chars[rng() % chars.size()];
    bool alphabet = !name.empty() && name.find_first_of("/ ") == std::string::npos;
    bool expected = alphabet && name != "." && name != "..";
    INFO("'" << name << "'");
    CHECK(study::IsSafeName(name) == expected);
  }
}
