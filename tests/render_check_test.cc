// Templates and values checked before anything is submitted, and values printed safely: through
// the built binary, with the local transport and no cluster (nothing gets as far as sbatch).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/test_util.h"

using namespace sweep;

namespace {

const std::string kBinary = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";

// Runs `cmd` through the shell; its exit status and everything it printed.
std::pair<int, std::string> Shell(const std::string& cmd) { return testing::RunShell(cmd + " 2>&1"); }

TEST_CASE("a value its template cannot carry stops run before anything is stored or submitted", "[cli]") {
  testing::TempDir dir;
  // The second trial's value has a line break (declared text); in a comment, its second line would run.
  std::string study =
      testing::WriteLocalStudyFile(dir, "carry", "# tag: {{tag}}\nTAG={{tag}}\nprintf '%s\\n' \"$TAG\"",
                                   "[space]\ntag = { values = [\"fine\", \"x\\ntouch PWNED\"], text = true }\n");
  auto [plan_rc, plan_out] = Shell(kBinary + " plan " + study);
  INFO(plan_out);
  CHECK(plan_rc == 2);
  CHECK_THAT(plan_out, Catch::Contains("refused") && Catch::Contains("job.sbatch:2") && Catch::Contains("line break") &&
                           Catch::Contains("1 trial(s) cannot be rendered"));
  // --json gives that trial the verdict "refused", not "run".
  auto [json_rc, json_out] = Shell(kBinary + " plan --json " + study);
  INFO(json_out);
  CHECK(json_rc == 2);
  CHECK_THAT(json_out, Catch::Contains("\"verdict\": \"refused\"") && Catch::Contains("\"refused\": 1"));
  auto [run_rc, run_out] = Shell(kBinary + " run " + study);
  INFO(run_out);
  CHECK(run_rc == 2);
  CHECK_THAT(run_out, Catch::Contains("nothing was submitted") && Catch::Contains("job.sbatch:2"));
  // Nothing reached the work directory: no script written, no job.
  CHECK_FALSE(std::filesystem::exists(dir.file("work/scripts")));
  auto [status_rc, status_out] = Shell(kBinary + " status " + study);
  INFO(status_out);
  CHECK_THAT(status_out, !Catch::Contains("submitting") && !Catch::Contains("pending"));
}

TEST_CASE("a value outside the safe alphabet stops plan and run at load, naming the study's line", "[cli]") {
  testing::TempDir dir;
  std::string study = testing::WriteLocalStudyFile(dir, "alpha", "printf '%s\\n' {{tag}}",
                                                   "[space]\ntag = [\"fine\", \"a;touch PWNED\"]\n");
  for (const char* cmd : {" plan ", " plan --json ", " run "}) {
    auto [rc, out] = Shell(kBinary + cmd + study);
    INFO(cmd << out);
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains("key 'space.tag'") && Catch::Contains("';'") && Catch::Contains("text = true"));
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("work/scripts")));
  CHECK_FALSE(std::filesystem::exists(dir.file("PWNED")));
}

TEST_CASE("a placeholder in a place no quoting makes safe is refused when the study loads", "[cli]") {
  testing::TempDir dir;
  std::string study =
      testing::WriteLocalStudyFile(dir, "place", "X=`echo {{lr}}`\necho \"$X\"", "[space]\nlr = [0.1]\n");
  auto [rc, out] = Shell(kBinary + " plan " + study);
  INFO(out);
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("job.sbatch:2: placeholder '{{lr}}'") && Catch::Contains("backquote") &&
                      Catch::Contains("LR={{lr}}"));
}

TEST_CASE("values reach the terminal with their control characters written visibly", "[cli]") {
  testing::TempDir dir;
  std::string study =
      testing::WriteLocalStudyFile(dir, "esc", "TAG={{tag}}\nprintf '%s\\n' \"$TAG\"",
                                   "[space]\ntag = { values = [\"\\u001b[31mred\", \"two\\nlines\"], text = true }\n");
  auto [rc, out] = Shell(kBinary + " plan " + study);
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find('\x1b') == std::string::npos);
  CHECK_THAT(out, Catch::Contains("tag=\\e[31mred") && Catch::Contains("tag=two\\nlines"));
}

}  // namespace
