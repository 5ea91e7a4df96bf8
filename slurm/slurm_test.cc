// Tests of the Slurm layer that need no cluster: parsers on recorded real output (Slurm 22.05, 24.11
// and 26.05 on our test labs; tests/cluster/record-outputs.sh), state mapping, template rendering and quoting.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "slurm/job_state.h"
#include "slurm/sbatch_script.h"
#include "slurm/slurm_client.h"
#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::slurm;

namespace {
const JobInfo* Find(const std::vector<JobInfo>& jobs, const std::string& id) {
  for (const auto& j : jobs)
    if (j.job_id == id) return &j;
  return nullptr;
}
const JobInfo* FindName(const std::vector<JobInfo>& jobs, const std::string& name) {
  for (const auto& j : jobs)
    if (j.name == name) return &j;
  return nullptr;
}
// The Slurm versions the labs run; each has its recordings in tests/data/<command>_<version>_<case>.txt.
const char* const kVersions[] = {"22.05", "24.11", "26.05"};

// A recorded refusal: the command's stderr, then "exit=N".
std::pair<std::string, int> Refusal(const std::string& file) {
  std::string text = testing::TestData(file);
  size_t at = text.rfind("exit=");
  REQUIRE(at != std::string::npos);
  return {text.substr(0, at), std::stoi(text.substr(at + 5))};
}
}  // namespace

TEST_CASE("squeue output of finished, failed, cancelled and pending jobs parses", "[slurm]") {
  size_t malformed = 99;
  auto jobs = ParseSqueue(testing::TestData("squeue_22.05_mixed.txt"), &malformed);
  CHECK(malformed == 0);
  REQUIRE(jobs.size() == 8);
  const JobInfo* ok = Find(jobs, "4");
  REQUIRE(ok);
  CHECK(ok->state == JobState::kCompleted);
  CHECK(ok->exit_code == "0:0");
  CHECK(ok->comment == "slurmsweep:study=rec:trial=t-ok:attempt=1");
  const JobInfo* fail = Find(jobs, "5");
  REQUIRE(fail);
  CHECK(fail->state == JobState::kFailed);
  CHECK(fail->exit_code == "42:0");  // squeue prints the wait status 10752
  CHECK(fail->reason == "NonZeroExitCode");
  const JobInfo* segv = Find(jobs, "9");
  REQUIRE(segv);
  CHECK(segv->exit_code == "0:11");
  const JobInfo* cancelled = Find(jobs, "6");
  REQUIRE(cancelled);
  CHECK(cancelled->state == JobState::kCancelled);
  CHECK(cancelled->comment == "with|pipe and spaces");  // last field keeps its '|'
  const JobInfo* pending = Find(jobs, "7");
  REQUIRE(pending);
  CHECK(pending->state == JobState::kPending);
  CHECK(pending->reason == "Resources");
  CHECK(pending->comment.empty());  // "(null)"
}

TEST_CASE("squeue's restart count (after the comment) is read; recordings without it still parse", "[slurm]") {
  // Recorded on the production-profile lab: job 5 after `scontrol requeue`, job 6 never restarted.
  auto jobs = ParseSqueue(testing::TestData("squeue_22.05_restarts.txt"));
  REQUIRE(jobs.size() == 2);
  CHECK(Find(jobs, "5")->restarts == 1);
  CHECK(Find(jobs, "5")->state == JobState::kPending);
  CHECK(Find(jobs, "5")->comment == "slurmsweep:study=rec:trial=t-rq:attempt=1");
  CHECK(Find(jobs, "6")->restarts == 0);
  CHECK(Find(jobs, "6")->comment == "with|pipe");
  auto old = ParseSqueue(testing::TestData("squeue_22.05_mixed.txt"));
  CHECK(Find(old, "6")->restarts == -1);
  CHECK(Find(old, "6")->comment == "with|pipe and spaces");
}

TEST_CASE("squeue -r output lists array tasks one by one", "[slurm]") {
  auto jobs = ParseSqueue(testing::TestData("squeue_22.05_array.txt"));
  REQUIRE(jobs.size() == 4);
  CHECK(Find(jobs, "10_0")->state == JobState::kRunning);
  CHECK(Find(jobs, "10_3")->reason == "JobArrayTaskLimit");
}

TEST_CASE("squeue lines with unexpected columns are counted, not fatal", "[slurm]") {
  size_t malformed = 0;
  auto jobs = ParseSqueue("4|COMPLETED|None|0\ngarbage line\n$(rm -rf /)|R|x|0|n|s|e|c\n\n", &malformed);
  CHECK(jobs.empty());
  CHECK(malformed == 3);
}

TEST_CASE("sacct -P output parses and skips steps", "[slurm]") {
  auto jobs = ParseSacct(testing::TestData("sacct_c_22.05.txt") + "5.batch|FAILED|42:0||batch|||\n");
  REQUIRE(jobs.size() == 3);
  CHECK(Find(jobs, "5")->exit_code == "42:0");
  CHECK(Find(jobs, "5")->state == JobState::kFailed);
  CHECK(Find(jobs, "6")->state == JobState::kCancelled);
}

TEST_CASE("sacct's Reason of an ended job is a pending reason it kept, not how it ended", "[slurm]") {
  auto jobs = ParseSacct(
      "7_3|COMPLETED|0:0|JobArrayTaskLimit|ss-a|2026-12-04T10:00:00|2026-12-04T10:01:00|c\n"
      "7_4|FAILED|3:0|Priority|ss-a|2026-12-04T10:00:00|2026-12-04T10:01:00|c\n"
      "7_5|PENDING|0:0|JobArrayTaskLimit|ss-a|Unknown|Unknown|c\n");
  REQUIRE(jobs.size() == 3);
  CHECK(Find(jobs, "7_3")->reason.empty());
  CHECK(Find(jobs, "7_4")->reason.empty());
  CHECK(Find(jobs, "7_5")->reason == "JobArrayTaskLimit");  // still waiting: the reason is current
}

TEST_CASE("scontrol -o show job parses state, exit code and comment", "[slurm]") {
  auto jobs = ParseScontrolShowJob(testing::TestData("scontrol_22.05_show_job.txt"));
  REQUIRE(jobs.size() == 6);
  CHECK(Find(jobs, "5")->exit_code == "42:0");
  CHECK(Find(jobs, "5")->state == JobState::kFailed);
  CHECK(Find(jobs, "6")->comment == "with|pipe and spaces");
  CHECK(Find(jobs, "4")->comment == "slurmsweep:study=rec:trial=t-ok:attempt=1");
}

// squeue -O exit_code prints the wait status on 22.05 ("10752") and exit:signal from 24.11 on ("42:0"):
// both must come out as sacct prints them, or a failed trial's exit code is wrong on one of them.
TEST_CASE("squeue of every tested Slurm: exit codes, states, comments and restart counts", "[slurm]") {
  for (std::string v : kVersions) {
    INFO("Slurm " << v);
    size_t malformed = 99;
    auto jobs = ParseSqueue(testing::TestData("squeue_" + v + "_mixed.txt"), &malformed);
    CHECK(malformed == 0);
    const JobInfo* ok = FindName(jobs, "ok");
    REQUIRE(ok);
    CHECK(ok->state == JobState::kCompleted);
    CHECK(ok->exit_code == "0:0");
    CHECK(ok->comment == "slurmsweep:study=rec:trial=t-ok:attempt=1");
    const JobInfo* fail = FindName(jobs, "fail42");
    REQUIRE(fail);
    CHECK(fail->state == JobState::kFailed);
    CHECK(fail->exit_code == "42:0");
    CHECK(fail->reason == "NonZeroExitCode");
    const JobInfo* segv = FindName(jobs, "segv");
    REQUIRE(segv);
    CHECK(segv->state == JobState::kFailed);
    CHECK(segv->exit_code == "0:11");
    const JobInfo* cancelled = FindName(jobs, "cancelme");
    REQUIRE(cancelled);
    CHECK(cancelled->state == JobState::kCancelled);
    CHECK(cancelled->exit_code == "0:15");
    CHECK(cancelled->comment == "with|pipe and spaces");
    CHECK(std::any_of(jobs.begin(), jobs.end(), [](const JobInfo& j) {
      return j.state == JobState::kPending && j.comment.empty() && !j.reason.empty();
    }));

    auto array = ParseSqueue(testing::TestData("squeue_" + v + "_array.txt"), &malformed);
    CHECK(malformed == 0);
    REQUIRE(array.size() == 4);
    int running = 0, throttled = 0;
    for (const auto& j : array) {
      CHECK(ArrayBaseId(j.job_id) == ArrayBaseId(array[0].job_id));
      CHECK(j.name == "arr");
      running += j.state == JobState::kRunning;
      throttled += j.state == JobState::kPending && j.reason == "JobArrayTaskLimit";
    }
    CHECK(running == 1);  // --array=0-3%1
    CHECK(throttled == 3);

    auto requeued = ParseSqueue(testing::TestData("squeue_" + v + "_restarts.txt"));
    const JobInfo* rq = FindName(requeued, "wrap");
    REQUIRE(rq);
    CHECK(rq->restarts == 1);  // after `scontrol requeue`
    CHECK(rq->state == JobState::kPending);
    CHECK(rq->comment == "slurmsweep:study=rec:trial=t-rq:attempt=1");
  }
}

TEST_CASE("scontrol -o show job of every tested Slurm", "[slurm]") {
  for (std::string v : kVersions) {
    INFO("Slurm " << v);
    auto jobs = ParseScontrolShowJob(testing::TestData("scontrol_" + v + "_show_job.txt"));
    const JobInfo* fail = FindName(jobs, "fail42");
    REQUIRE(fail);
    CHECK(fail->exit_code == "42:0");
    CHECK(fail->state == JobState::kFailed);
    CHECK(fail->comment == "slurmsweep:study=rec:trial=t-fail:attempt=1");
  }
}

TEST_CASE("sacct of Slurm 24.11 and 26.05 with slurmdbd: exit codes, states and comments", "[slurm]") {
  for (std::string v : {"24.11", "26.05"}) {  // 22.05: sacct_c_22.05.txt above
    INFO("Slurm " << v);
    size_t malformed = 99;
    auto jobs = ParseSacct(testing::TestData("sacct_" + v + "_accounting.txt"), &malformed);
    CHECK(malformed == 0);
    REQUIRE(jobs.size() == 5);
    REQUIRE(FindName(jobs, "ok"));
    CHECK(FindName(jobs, "ok")->comment == "slurmsweep:study=rec:trial=t-ok:attempt=1");
    REQUIRE(FindName(jobs, "fail42"));
    CHECK(FindName(jobs, "fail42")->exit_code == "42:0");
    CHECK(FindName(jobs, "fail42")->state == JobState::kFailed);
    REQUIRE(FindName(jobs, "segv"));
    CHECK(FindName(jobs, "segv")->exit_code == "0:11");
    REQUIRE(FindName(jobs, "cancelme"));
    CHECK(FindName(jobs, "cancelme")->state == JobState::kCancelled);  // "CANCELLED by 0"
    CHECK(FindName(jobs, "cancelme")->comment == "with|pipe and spaces");
  }
}

TEST_CASE("sbatch refusals, a controller that is down and sacct without accounting, as every tested Slurm says them",
          "[slurm]") {
  for (std::string v : kVersions) {
    INFO("Slurm " << v);
    auto [partition, partition_rc] = Refusal("sbatch_" + v + "_invalid_partition.txt");
    CHECK(partition_rc != 0);
    CHECK(IsStudyWideRefusal(partition));
    CHECK_FALSE(IsSubmitLimit(partition));
    CHECK_FALSE(IsSchedulerUnavailable(partition));
    auto [config, config_rc] = Refusal("sbatch_" + v + "_node_config.txt");
    CHECK(config_rc != 0);
    CHECK_FALSE(IsStudyWideRefusal(config));
    CHECK_FALSE(IsSubmitLimit(config));
    CHECK_FALSE(IsSchedulerUnavailable(config));
    for (std::string command : {"squeue", "sbatch", "scancel"}) {
      auto [down, down_rc] = Refusal(command + "_" + v + "_controller_down.txt");
      INFO(command << ": " << down);
      CHECK(down_rc != 0);
      CHECK(IsSchedulerUnavailable(down));  // the run loop waits, marks nothing
      CHECK_FALSE(IsStudyWideRefusal(down));
    }
  }
}

TEST_CASE("sbatch --parsable output", "[slurm]") {
  CHECK(ParseSbatchParsable("123\n").value() == "123");
  CHECK(ParseSbatchParsable("77;cluster2\n").value() == "77");
  CHECK_FALSE(ParseSbatchParsable("sbatch: error: Batch job submission failed\n").ok());
  CHECK_FALSE(ParseSbatchParsable("").ok());
}

TEST_CASE("Slurm states map to ours", "[slurm]") {
  CHECK(FromSlurmState("CANCELLED by 0") == JobState::kCancelled);
  CHECK(FromSlurmState("CANCELLED+") == JobState::kCancelled);
  CHECK(FromSlurmState("OUT_OF_MEMORY") == JobState::kOutOfMemory);
  CHECK(FromSlurmState("NODE_FAIL") == JobState::kNodeFail);
  CHECK(FromSlurmState("PREEMPTED") == JobState::kPreempted);
  CHECK(FromSlurmState("TIMEOUT") == JobState::kTimeout);
  CHECK(FromSlurmState("COMPLETING") == JobState::kRunning);
  CHECK(FromSlurmState("REQUEUED") == JobState::kPending);
  CHECK(FromSlurmState("PD") == JobState::kPending);
  CHECK(FromSlurmState("WHATEVER") == JobState::kUnknown);
  CHECK_FALSE(IsTerminal(JobState::kRunning));
  CHECK(IsTerminal(JobState::kTimeout));
  for (auto s : {JobState::kPending, JobState::kOutOfMemory, JobState::kNodeFail}) {
    CHECK(JobStateFromName(JobStateName(s)) == s);
  }
}

TEST_CASE("scheduler-down messages are recognised", "[slurm]") {
  CHECK(IsSchedulerUnavailable("squeue: error: Unable to contact slurm controller (connect failure)"));
  CHECK(IsSchedulerUnavailable("slurm_load_jobs error: Socket timed out on send/recv operation"));
  CHECK_FALSE(IsSchedulerUnavailable("sbatch: error: invalid partition specified: gpu"));
}

TEST_CASE("shell quoting keeps hostile values literal", "[slurm]") {
  testing::TempDir dir;
  std::string marker = dir.file("pwned");
  std::string value = "$(touch " + marker + "); `touch " + marker + "` '\"\n;|&";
  std::string cmd = "printf %s " + ShellQuote(value) + " > " + ShellQuote(dir.file("out"));
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(testing::ReadAll(dir.file("out")) == value);
  CHECK_FALSE(std::filesystem::exists(marker));
  CHECK(ShellQuote("it's") == "'it'\\''s'");
}

TEST_CASE("templates render quoted values and reject unknown or unbalanced placeholders", "[slurm]") {
  std::map<std::string, std::string> vars = {{"lr", "0.01"}, {"opt", "adam"}, {"flags", "--a --b"}};
  auto r = RenderTemplate("#!/bin/bash\ntrain --lr {{lr}} --opt {{ opt }} {{raw:flags}}\n", "t.sbatch", vars);
  REQUIRE(r.ok());
  CHECK(*r == "#!/bin/bash\ntrain --lr '0.01' --opt 'adam' --a --b\n");
  // A value outside the safe alphabet is refused unless declared text, and then only a variable's
  // value or a comment may hold it (raw: stays the author's).
  vars["opt"] = "$(reboot)";
  auto hostile = RenderTemplate("#!/bin/bash\ntrain --opt {{opt}}\n", "t.sbatch", vars);
  REQUIRE_FALSE(hostile.ok());
  CHECK_THAT(hostile.status().message(), Catch::Contains("t.sbatch:2") && Catch::Contains("'$'"));
  CHECK_FALSE(RenderTemplate("#!/bin/bash\ntrain --opt {{opt}}\n", "t.sbatch", vars,
                             {.text = {"opt"}, .option = {}, .path = {}})
                  .ok());
  auto assigned = RenderTemplate("#!/bin/bash\nOPT={{opt}}\ntrain --opt \"$OPT\"\n", "t.sbatch", vars,
                                 {.text = {"opt"}, .option = {}, .path = {}});
  REQUIRE(assigned.ok());
  CHECK(*assigned == "#!/bin/bash\nOPT='$(reboot)'\ntrain --opt \"$OPT\"\n");

  auto unknown = RenderTemplate("a\nb {{nope}}\n", "t.sbatch", vars);
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.status().message(), Catch::Contains("t.sbatch:2") && Catch::Contains("nope"));

  auto open = RenderTemplate("x {{lr\n}}", "t.sbatch", vars);
  REQUIRE_FALSE(open.ok());
  CHECK_THAT(open.status().message(), Catch::Contains("t.sbatch:1"));
  CHECK_FALSE(RenderTemplate("x }} y", "t.sbatch", vars).ok());
  CHECK_FALSE(RenderTemplate("x {{a b}} y", "t.sbatch", vars).ok());

  auto names = TemplatePlaceholders("{{a}} {{raw:b}} {{a}}", "t");
  REQUIRE(names.ok());
  CHECK(*names == std::vector<std::string>{"a", "b"});

  std::map<std::string, std::string> nul = {{"v", std::string("a\0b", 3)}};
  CHECK_FALSE(RenderTemplate("{{v}}", "t", nul).ok());
}

// The rendered script is run by a real bash: whatever quotes surround a placeholder, the value
// comes out exactly as given and nothing in it runs.
TEST_CASE("a placeholder inside quotes or a here-document stays literal there", "[slurm]") {
  testing::TempDir dir;
  std::string marker = dir.file("pwned");
  std::string hostile = "a b $(touch " + marker + ") `touch " + marker + "` it's \"q\" \\ $HOME !x *";
  std::map<std::string, std::string> vars = {{"v", hostile}, {"dir", dir.path()}};
  // A value declared text (outside the safe alphabet) stands only as a variable's value or in a
  // comment; every quoting of those places reads back the value exactly.
  std::string tmpl =
      "#!/bin/bash\n"
      "# a comment: don't let this apostrophe confuse {{v}}\n"
      "set -eu\n"
      "out={{dir}}/out\n"
      "A={{v}}\n"
      "B=\"{{v}}\"\n"
      "C='x{{v}}y'\n"
      "export D=\"in {{v}}\"\n"
      "E=1 F=pre{{v}} G=2\n"
      "printf '%s\\n' \"$A\" \"$B\" \"$C\" \"$D\" \"$F\" > \"$out\"\n";
  auto r = RenderTemplate(tmpl, "t.sbatch", vars, {.text = {"v"}, .option = {}, .path = {"dir"}});
  REQUIRE(r.ok());
  testing::WriteAll(dir.file("job.sh"), *r);
  INFO(*r);
  REQUIRE(std::system(("bash " + ShellQuote(dir.file("job.sh"))).c_str()) == 0);
  CHECK(testing::ReadAll(dir.file("out")) ==
        hostile + "\n" + hostile + "\n" + "x" + hostile + "y\n" + "in " + hostile + "\n" + "pre" + hostile + "\n");
  CHECK_FALSE(std::filesystem::exists(marker));

  // What cannot be made literal is refused, naming the line.
  auto ansi = RenderTemplate("echo $'{{v}}'\n", "t.sbatch", vars, {.text = {"v"}, .option = {}, .path = {}});
  REQUIRE_FALSE(ansi.ok());
  CHECK_THAT(ansi.status().message(), Catch::Contains("t.sbatch:1: placeholder '{{v}}'") && Catch::Contains("$'"));
  std::map<std::string, std::string> multiline = {{"v", "a\nEOF\nrm -rf x"}};
  auto doc =
      RenderTemplate("cat <<EOF\n{{v}}\nEOF\n", "t.sbatch", multiline, {.text = {"v"}, .option = {}, .path = {}});
  REQUIRE_FALSE(doc.ok());
  CHECK_THAT(doc.status().message(), Catch::Contains("t.sbatch:2") && Catch::Contains("here-document"));
  // As a variable's value a line break is just part of the quoted value.
  CHECK(RenderTemplate("V=\"{{v}}\"\n", "t", multiline, {.text = {"v"}, .option = {}, .path = {}}).ok());
  // raw: is the author's: inserted as it is, and named as written when unknown.
  CHECK(*RenderTemplate("echo \"{{raw:v}}\"", "t", {{"v", "$x"}}) == "echo \"$x\"");
  CHECK_THAT(RenderTemplate("{{raw:nope}}", "t", vars).status().message(), Catch::Contains("'{{raw:nope}}'"));
}

TEST_CASE("a value is rendered only if it is no option and no path leaving its place, unless declared", "[slurm]") {
  auto render = [](const std::string& v, const DeclaredValues& declared = {}) {
    return RenderTemplate("#!/bin/bash\ntrain --x={{v}} -- {{v}}\n", "t.sbatch", {{"v", v}}, declared);
  };
  // Numbers in every form ParamToString gives pass.
  for (const char* number : {"-0.5", "-1e-05", "-0.001", "-3", "1e+20", "-.5", "0", "+2"}) {
    INFO(number);
    CHECK(render(number).ok());
  }
  for (const char* option : {"-x", "--output=o", "-", "--", "-1x", "-e5", "-inf", "-nan"}) {
    INFO(option);
    auto r = render(option);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("t.sbatch:2: placeholder '{{v}}'") && Catch::Contains("option") &&
                                         Catch::Contains("option = true"));
    CHECK(render(option, {.text = {}, .option = {"v"}, .path = {}}).ok());
  }
  for (const char* path : {"/abs", "..", "../x", "a/../b", "a/..", "of=../x", "x=/y", "a=b=/c", "--o=../x"}) {
    INFO(path);
    DeclaredValues option{.text = {}, .option = {"v"}, .path = {}};
    auto r = render(path, option);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("t.sbatch:2") && Catch::Contains("path = true"));
    CHECK(render(path, {.text = {}, .option = {"v"}, .path = {"v"}}).ok());
  }
  for (const char* fine : {"a..b", "1..2", "x/y", "a.b/c..", "...", "x:/y", "user@host", "a=b", "./x"}) {
    INFO(fine);
    CHECK(render(fine).ok());
  }
  // {{raw:...}} stays the author's: its value is not checked for shape.
  CHECK(RenderTemplate("train {{raw:v}}\n", "t", {{"v", "--a --b"}}).ok());
}

TEST_CASE("a template's own #SBATCH directives are those before its first command", "[slurm]") {
  auto d = SbatchDirectives(
      "#!/bin/bash\n#SBATCH --signal=B:USR1@45\n\n# a comment\n  #SBATCH --exclusive\n"
      "echo hi\n#SBATCH --ignored-by-sbatch\n");
  REQUIRE(d.size() == 2);
  CHECK(d[0] == "#SBATCH --signal=B:USR1@45");
  CHECK(d[1] == "#SBATCH --exclusive");
  CHECK(SbatchDirectives("echo\n#SBATCH --x\n").empty());
  CHECK(SbatchDirectives("").empty());
}

TEST_CASE("a full submit quota is told from a bad job", "[slurm]") {
  // As sbatch prints them (Slurm 22.05 src/common/slurm_errno.c wording).
  CHECK(
      IsSubmitLimit("sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job submission failed: "
                    "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)\n"));
  CHECK(IsSubmitLimit("sbatch: error: AssocMaxSubmitJobLimit\n"));
  // Refusals no trial can get past until the study file changes (Slurm 22.05's words).
  CHECK(
      IsStudyWideRefusal("sbatch: error: invalid partition specified: gpu\nsbatch: error: Batch job submission "
                         "failed: Invalid partition name specified"));
  CHECK(
      IsStudyWideRefusal("sbatch: error: Batch job submission failed: Invalid account or account/partition "
                         "combination specified"));
  CHECK(IsStudyWideRefusal("sbatch: error: Batch job submission failed: Invalid qos specification"));
  CHECK_FALSE(
      IsStudyWideRefusal("sbatch: error: Batch job submission failed: Requested node configuration is not "
                         "available"));
  CHECK_FALSE(IsStudyWideRefusal("sbatch: error: AssocMaxSubmitJobLimit\n"));
  // Seen on the test cluster with MaxJobCount reached (sbatch keeps retrying until stopped).
  CHECK(IsSubmitLimit("sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n"));
  CHECK_FALSE(IsSubmitLimit("sbatch: error: Batch job submission failed: Invalid partition name specified\n"));
  CHECK_FALSE(
      IsSubmitLimit("sbatch: error: QOSMaxWallDurationPerJobLimit\nsbatch: error: Batch job submission failed: "
                    "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)\n"));
  CHECK_FALSE(
      IsSubmitLimit("sbatch: error: Batch job submission failed: Requested node configuration is not available\n"));
  CHECK(ArrayBaseId("123_4") == "123");
  CHECK(ArrayBaseId("123") == "123");
}

// `scontrol show config` as Slurm 22.05 prints it (lab with MaxJobCount=20): neighbours that share a
// prefix (MaxJobId) are not taken for MaxJobCount; a config that cannot be read leaves all unknown.
TEST_CASE("the site's limits are read from scontrol show config", "[slurm]") {
  SiteLimits l = ParseSiteLimits(
      "Configuration data as of 2026-12-06T02:20:00\nMaxArraySize            = 1001\nMaxDBDMsgs              = 0\n"
      "MaxJobId                = 67043328\nMaxJobCount             = 20\nMaxStepCount            = 40000\n"
      "MinJobAge               = 300 sec\n");
  CHECK(l.max_array_size == 1001);
  CHECK(l.max_job_count == 20);
  CHECK(l.min_job_age_s == 300);
  SiteLimits none = ParseSiteLimits("MaxJobCountX = 5\nMaxArraySize = lots\nMinJobAge = \n");
  CHECK(none.max_array_size == 0);
  CHECK(none.max_job_count == 0);
  CHECK(none.min_job_age_s == 300);  // Slurm's default
}

TEST_CASE("the #SBATCH header goes after the shebang and refuses unsafe values", "[slurm]") {
  SbatchHeader h;
  h.job_name = "ss-quick-t-abc";
  h.output = "/w/logs/t-abc.out";
  h.comment = "slurmsweep:study=quick:trial=t-abc:attempt=1";
  h.partition = "debug";
  h.time_limit = "00:05:00";
  auto s = AddSbatchHeader("#!/bin/sh\necho hi\n", h);
  REQUIRE(s.ok());
  CHECK_THAT(*s, Catch::StartsWith("#!/bin/sh\n#SBATCH --job-name=ss-quick-t-abc\n"));
  CHECK_THAT(*s, Catch::Contains("#SBATCH --comment=slurmsweep:study=quick:trial=t-abc:attempt=1\n"));
  CHECK_THAT(*s, Catch::EndsWith("#SBATCH --time=00:05:00\necho hi\n"));
  h.array = "0-59%12";
  h.output = "/w/logs/ss-quick-arr1-1_%a.out";
  s = AddSbatchHeader("#!/bin/sh\necho hi\n", h);
  REQUIRE(s.ok());
  CHECK_THAT(*s, Catch::Contains("#SBATCH --output=/w/logs/ss-quick-arr1-1_%a.out\n"));
  CHECK_THAT(*s, Catch::Contains("#SBATCH --array=0-59%12\n"));
  h.partition = "debug --wrap=x";
  CHECK_FALSE(AddSbatchHeader("echo\n", h).ok());
}

TEST_CASE("each run starts its log afresh, and a template cannot set what the header owns", "[slurm]") {
  SbatchHeader h;
  h.output = "/w/logs/t-abc.1.out";
  auto s = AddSbatchHeader("#!/bin/bash\necho hi\n", h);
  REQUIRE(s.ok());
  // Whatever the site's JobFileAppend, a requeued run does not append to the previous run's log.
  CHECK_THAT(*s, Catch::Contains("#SBATCH --output=/w/logs/t-abc.1.out\n#SBATCH --open-mode=truncate\n"));
  for (std::string line :
       {"#SBATCH --open-mode=append", "#SBATCH --open=append", "#SBATCH -o /tmp/x.out", "#SBATCH --output /tmp/x.out",
        "#SBATCH -J other", "#SBATCH --job-name=x", "#SBATCH --comment=x", "#SBATCH --array=0-3", "#SBATCH -D /tmp"}) {
    Status st = CheckOwnDirectives("#!/bin/bash\n#SBATCH --time=5\n" + line + "\necho\n", "t.sbatch");
    INFO(line);
    CHECK_THAT(st.message(), Catch::StartsWith("t.sbatch:3: '" + line + "'") && Catch::Contains("remove the line"));
  }
  CHECK(CheckOwnDirectives("#!/bin/bash\n#SBATCH --time=5\n#SBATCH --account=a -c 4\n#SBATCH --constraint=x\n", "t")
            .ok());
  // Past the first command sbatch reads no directive: nothing to refuse there.
  CHECK(CheckOwnDirectives("#!/bin/bash\necho\n#SBATCH --open-mode=append\n", "t").ok());
}

namespace {

// Answers each command by the first rule whose needle it contains; records what was run.
class ScriptedTransport final : public Transport {
 public:
  std::vector<std::pair<std::string, CommandOutput>> rules;
  std::vector<std::string> commands;
  Result<CommandOutput> Run(const std::string& command) override {
    commands.push_back(command);
    for (const auto& [needle, out] : rules)
      if (command.find(needle) != std::string::npos) return out;
    return CommandOutput{1, "", "unexpected command"};
  }
  Status WriteFile(const std::string&, std::string_view, int) override { return Status::OK(); }
  Result<std::string> ReadFrom(const std::string&, uint64_t, size_t) override { return std::string(); }
  std::string Describe() const override { return "scripted"; }
};

}  // namespace

TEST_CASE("FindByName asks accounting for the names squeue has purged, and stops asking where there is none",
          "[slurm]") {
  ScriptedTransport t;
  t.rules = {
      {"squeue",
       {0, "12|RUNNING|None|0|ss-s-t-a|2026-12-02T17:18:01|NONE|slurmsweep:study=s:trial=t-a:attempt=1|0\n", ""}},
      {"sacct",
       {0,
        "9|COMPLETED|0:0|None|ss-s-t-b|2026-12-02T17:00:01|2026-12-02T17:00:09|slurmsweep:study=s:trial=t-b:attempt="
        "1\n",
        ""}}};
  SlurmClient client(t);
  auto found = client.FindByName({"ss-s-t-a", "ss-s-t-b"});
  REQUIRE(found.ok());
  REQUIRE(found->size() == 2);
  CHECK((*found)[1].job_id == "9");
  CHECK((*found)[1].comment == "slurmsweep:study=s:trial=t-b:attempt=1");
  REQUIRE(t.commands.size() == 2);
  CHECK_THAT(t.commands[1], Catch::Contains("--name='ss-s-t-b'"));  // only the name squeue did not list

  for (std::string v : kVersions) {  // what sacct says on a cluster without accounting, as recorded
    INFO("Slurm " << v);
    auto [err, rc] = Refusal("sacct_" + v + "_disabled.txt");
    REQUIRE(rc != 0);
    ScriptedTransport none;
    none.rules = {{"squeue", {0, "", ""}}, {"sacct", {rc, "", err}}};
    SlurmClient no_accounting(none);
    REQUIRE(no_accounting.FindByName({"ss-s-t-a"}).ok());
    REQUIRE(no_accounting.FindByName({"ss-s-t-a"}).ok());
    CHECK(no_accounting.stats().sacct == 1);  // learned once
  }
}

TEST_CASE("Submit classifies sbatch's refusal where it parses it: a study-wide setting carries its cause", "[slurm]") {
  for (std::string v : kVersions) {
    INFO("Slurm " << v);
    auto [partition, partition_rc] = Refusal("sbatch_" + v + "_invalid_partition.txt");
    auto [config, config_rc] = Refusal("sbatch_" + v + "_node_config.txt");
    ScriptedTransport study_wide, one_job;
    study_wide.rules = {{"sbatch", {partition_rc, "", partition}}};
    one_job.rules = {{"sbatch", {config_rc, "", config}}};
    SlurmClient a(study_wide), b(one_job);
    auto refused = a.Submit("/w/s.sbatch");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == Status::Code::kInvalidArgument);
    CHECK(refused.status().cause() == Status::Cause::kStudyWideRefusal);
    CHECK(refused.status().WithContext("tick 3").cause() == Status::Cause::kStudyWideRefusal);
    auto failed = b.Submit("/w/s.sbatch");
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.status().code() == Status::Code::kInvalidArgument);
    CHECK(failed.status().cause() == Status::Cause::kNone);  // the trial's job fails, the study goes on
  }
}
