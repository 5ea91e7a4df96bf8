// A study's values stay the user's on the cluster: run through the built binary on the lab, over
// SSH and with the local transport, under umask 022, a token from [job.vars] must be in no file
// another user can reach, and the study's scripts, logs and trial folders are 0700 (scripts
// 0700, array scripts 0600). Tagged [cluster].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;
namespace fs = std::filesystem;

namespace {

const std::string kToken = "tok-7d1e0c5a9b";

// Writes a study with transport `transport` whose jobs print the token into their trial folder.
std::string WriteTokenStudy(const testing::TempDir& dir, const std::string& transport) {
  testing::WriteAll(dir.file("job.sbatch"),
                    "#!/bin/bash\nmkdir -p {{trial_dir}}\necho \"token={{api_token}} lr={{lr}}\" > {{trial_dir}}/"
                    "config.txt\necho '{\"step\": 1, \"lm_loss\": {{lr}}}'\n");
  std::string ssh = transport != "ssh" ? "" : testing::LabSshLogin();
  testing::WriteAll(dir.file("study.toml"),
                    fmt::format("[study]\nname = \"private\"\nmetric_format = \"jsonl\"\n\n[cluster]\ntransport = "
                                "\"{}\"\n{}partition = \"{}\"\nworkdir = \"{}\"\npoll_interval_s = 0.3\n\n"
                                "[job]\ntemplate = \"job.sbatch\"\ncpus_per_task = 1\nmem = \"100M\"\n"
                                "time_limit = \"00:05:00\"\n\n[job.vars]\napi_token = \"{}\"\n\n"
                                "[space]\nlr = [0.1, 0.2, 0.3]\n",
                                transport, ssh, testing::ClusterVar("SLURMSWEEP_PARTITION"), dir.file("work"), kToken));
  return dir.file("study.toml");
}

mode_t ModeOf(const fs::path& p) {
  struct stat st;
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Whether another user could read `file`: it is o+r and every folder from `root` down to it is o+x.
bool OthersCanRead(const fs::path& root, const fs::path& file) {
  if ((ModeOf(file) & S_IROTH) == 0) return false;
  for (fs::path p = file.parent_path(); p.string().size() >= root.string().size(); p = p.parent_path()) {
    if ((ModeOf(p) & S_IXOTH) == 0) return false;
    if (p == root) break;
  }
  return true;
}

void CheckPrivate(const testing::TempDir& dir) {
  fs::path work = dir.file("work");
  for (const char* sub : {"scripts/private", "logs/private", "trials/private"}) {
    INFO(sub);
    REQUIRE(fs::is_directory(work / sub));
    CHECK(ModeOf(work / sub) == 0700);
  }
  int scripts = 0, with_token = 0;
  for (const auto& e : fs::recursive_directory_iterator(work)) {
    if (!e.is_regular_file()) continue;
    INFO(e.path().string());
    if (e.path().extension() == ".sbatch") {
      ++scripts;
      CHECK((ModeOf(e.path()) == 0700 || ModeOf(e.path()) == 0600));
    }
    if (testing::ReadAll(e.path().string()).find(kToken) != std::string::npos) {
      ++with_token;
      CHECK_FALSE(OthersCanRead(work, e.path()));
    }
  }
  CHECK(scripts >= 3);
  CHECK(with_token >= 6);  // each trial's script and its trial folder's config.txt at least
}

}  // namespace

TEST_CASE("over SSH, the token of [job.vars] is in no file another user can read; study folders are 0700",
          "[cluster]") {
  testing::TempDir dir;
  std::string path = WriteTokenStudy(dir, "ssh");
  auto [rc, out] =
      testing::RunShell(fmt::format("umask 022 && {}/bin/slurmsweep run {} 2>&1", SLURMSWEEP_BINARY_DIR, path));
  INFO(out);
  REQUIRE(rc == 0);
  CheckPrivate(dir);
}

TEST_CASE("with the local transport, the same: scripts 0700 and the study's folders 0700 under umask 022",
          "[cluster]") {
  testing::TempDir dir;
  std::string path = WriteTokenStudy(dir, "local");
  auto [rc, out] = testing::RunShell(fmt::format("umask 022 && SLURM_CONF={} {}/bin/slurmsweep run {} 2>&1",
                                                 testing::ClusterVar("SLURM_CONF"), SLURMSWEEP_BINARY_DIR, path));
  INFO(out);
  REQUIRE(rc == 0);
  CheckPrivate(dir);
}
