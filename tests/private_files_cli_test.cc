// Another user who can write to the study's folder plants symbolic links where slurmsweep writes
// (the database, its lock, pid file and log, the report and CSVs): through the built binary, each
// is refused or replaced, and the file it points at keeps its bytes and mode. Tagged [cli].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "slurm/transport.h"
#include "store/store.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

namespace fs = std::filesystem;

const std::string kBinary = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";

std::pair<int, std::string> Shell(const std::string& cmd) { return testing::RunShell(cmd + " 2>&1"); }

}  // namespace

TEST_CASE("run refuses a symbolic link planted at the database, its lock, pid file or log", "[cli]") {
  for (const char* suffix : {".lock", ".pid", ".log", ""}) {
    DYNAMIC_SECTION("planted at study.db" << suffix) {
      testing::TempDir dir;
      std::string path = testing::WriteLocalStudyFile(dir, "planted", "true", "[space]\nlr = [0.1]\n");
      testing::Victim victim(dir.file("victim"));
      std::string planted = dir.file(std::string("planted.db") + suffix);
      REQUIRE(::symlink(victim.path.c_str(), planted.c_str()) == 0);
      // --detach opens the log and pid file before it forks; the lock and database come first.
      auto [rc, out] = Shell(kBinary + " run --detach " + path);
      INFO(out);
      CHECK(rc != 0);
      CHECK_THAT(out, Catch::Contains(planted + " is a symbolic link"));
      CHECK(victim.Untouched());
      CHECK(fs::is_symlink(planted));
    }
  }
}

TEST_CASE("report replaces links planted at the HTML and CSV files, never their targets; modes follow the umask",
          "[cli]") {
  testing::TempDir dir;
  std::string path = testing::WriteLocalStudyFile(dir, "rep", "true", "[space]\nlr = [0.1, 0.01]\n");
  {
    auto db = store::Store::Open(dir.file("rep.db"));
    REQUIRE(db.ok());
    auto study = (*db)->UpsertStudy("rep", path, "h", 1.0);
    REQUIRE(study.ok());
    std::vector<store::TrialRecord> trials(1);
    trials[0].trial_key = "t-0";
    trials[0].params_json = R"({"lr":0.1})";
    trials[0].state = "completed";
    REQUIRE((*db)->InsertTrialsIfAbsent(*study, trials).ok());
  }
  fs::create_directories(dir.file("csv"));
  std::vector<testing::Victim> victims;
  std::vector<std::string> outputs = {dir.file("report.html"), dir.file("csv/trials.csv"), dir.file("csv/metrics.csv"),
                                      dir.file("csv/importance.csv")};
  for (size_t i = 0; i < outputs.size(); ++i) {
    victims.emplace_back(dir.file("victim" + std::to_string(i)));
    REQUIRE(::symlink(victims.back().path.c_str(), outputs[i].c_str()) == 0);
  }
  auto [rc, out] =
      Shell(fmt::format("umask 077 && {} report {} --html {} --csv {}", kBinary, path, outputs[0], dir.file("csv")));
  INFO(out);
  REQUIRE(rc == 0);
  for (const testing::Victim& v : victims) CHECK(v.Untouched());
  for (const std::string& o : outputs) {
    INFO(o);
    CHECK_FALSE(fs::is_symlink(o));
    struct stat st;
    REQUIRE(::lstat(o.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);  // 0666 less umask 077: a report is not forced to 0644
  }
  CHECK_THAT(testing::ReadAll(outputs[0]), Catch::Contains("<html"));
}

TEST_CASE("the local transport never writes a script through a link planted at a temporary name", "[cli]") {
  testing::TempDir dir;
  testing::Victim victim(dir.file("victim"));
  std::string script = dir.file("t-1.1.sbatch");
  // The names the local transport used before: SCRIPT.tmp.PID, guessable by anyone.
  REQUIRE(::symlink(victim.path.c_str(), (script + ".tmp." + std::to_string(::getpid())).c_str()) == 0);
  auto transport = slurm::NewLocalTransport();
  REQUIRE(transport->WriteFile(script, "#!/bin/bash\necho token\n", 0700).ok());
  CHECK(victim.Untouched());
  CHECK(testing::ReadAll(script) == "#!/bin/bash\necho token\n");
  struct stat st;
  REQUIRE(::lstat(script.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
}

TEST_CASE("links planted at the database's -wal, -shm and -journal are never written through", "[cli]") {
  // SQLite makes these itself (opened with O_NOFOLLOW by its unix VFS): checked, not assumed.
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    DYNAMIC_SECTION(suffix) {
      testing::TempDir dir;
      testing::Victim victim(dir.file("victim"));
      std::string db = dir.file("study.db");
      REQUIRE(::symlink(victim.path.c_str(), (db + suffix).c_str()) == 0);
      {
        auto store = store::Store::Open(db);
        if (store.ok()) {
          auto study = (*store)->UpsertStudy("s", dir.file("study.toml"), "h", 1.0);
          INFO(study.status().ToString());
        }
      }
      CHECK(victim.Untouched());
    }
  }
}

TEST_CASE("a database in a folder another user owns is refused before anything is created there", "[cli]") {
  if (::geteuid() != 0) FAIL("needs root to give a folder to another user (CI and the lab run as root)");
  testing::TempDir dir;
  std::string shared = dir.file("shared");
  fs::create_directories(shared);
  ::chmod(shared.c_str(), 01777);  // a shared project folder, or /tmp
  REQUIRE(::chown(shared.c_str(), 65534, 65534) == 0);
  auto store = store::Store::Open(shared + "/study.db");
  REQUIRE_FALSE(store.ok());
  CHECK_THAT(store.status().message(), Catch::Contains("must be in a folder you own") && Catch::Contains("65534"));
  CHECK(fs::is_empty(shared));
  REQUIRE(::chown(shared.c_str(), ::geteuid(), ::getegid()) == 0);
  CHECK(store::Store::Open(shared + "/study.db").ok());  // the same folder, ours: opened
}
