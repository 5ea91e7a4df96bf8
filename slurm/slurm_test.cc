// Tests of the Slurm layer that need no cluster: parsers on recorded real output (Slurm 22.05
// on our test cluster), state mapping, template rendering and quoting.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

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
  std::map<std::string, std::string> vars = {{"lr", "0.01"}, {"opt", "$(reboot)"}, {"flags", "--a --b"}};
  auto r = RenderTemplate("#!/bin/bash\ntrain --lr {{lr}} --opt {{ opt }} {{raw:flags}}\n", "t.sbatch", vars);
  REQUIRE(r.ok());
  CHECK(*r == "#!/bin/bash\ntrain --lr '0.01' --opt '$(reboot)' --a --b\n");

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
  std::string tmpl =
      "#!/bin/bash\n"
      "# a comment: don't let this apostrophe confuse {{v}}\n"
      "set -eu\n"
      "out={{dir}}/out\n"
      "printf '%s\\n' {{v}} > \"$out\"\n"
      "printf '%s\\n' \"{{v}}\" >> \"$out\"\n"
      "printf '%s\\n' 'x{{v}}y' >> \"$out\"\n"
      "printf '%s\\n' \"$(printf '%s' \"in {{v}}\")\" >> \"$out\"\n"
      "cat >> \"$out\" <<EOF\n"
      "doc {{v}}\n"
      "EOF\n"
      "cat >> \"$out\" <<-'END'\n"
      "\tquoted {{v}}\n"
      "\tEND\n"
      "printf '%s\\n' \"after {{v}}\" >> \"$out\"\n";
  auto r = RenderTemplate(tmpl, "t.sbatch", vars);
  REQUIRE(r.ok());
  testing::WriteAll(dir.file("job.sh"), *r);
  INFO(*r);
  REQUIRE(std::system(("bash " + ShellQuote(dir.file("job.sh"))).c_str()) == 0);
  // Unquoted, the value is one word; in a quoted here-document nothing is expanded, so the
  // value went in as it is.
  CHECK(testing::ReadAll(dir.file("out")) == hostile + "\n" + hostile + "\n" + "x" + hostile + "y\n" + "in " + hostile +
                                                 "\n" + "doc " + hostile + "\n" + "quoted " + hostile + "\n" +
                                                 "after " + hostile + "\n");
  CHECK_FALSE(std::filesystem::exists(marker));

  // What cannot be made literal is refused, naming the line.
  auto ansi = RenderTemplate("echo $'{{v}}'\n", "t.sbatch", vars);
  REQUIRE_FALSE(ansi.ok());
  CHECK_THAT(ansi.status().message(), Catch::Contains("t.sbatch:1: placeholder '{{v}}'") && Catch::Contains("$'"));
  std::map<std::string, std::string> multiline = {{"v", "a\nEOF\nrm -rf x"}};
  auto doc = RenderTemplate("cat <<EOF\n{{v}}\nEOF\n", "t.sbatch", multiline);
  REQUIRE_FALSE(doc.ok());
  CHECK_THAT(doc.status().message(), Catch::Contains("t.sbatch:2") && Catch::Contains("here-document"));
  // Outside a here-document a line break is just part of the quoted value.
  CHECK(RenderTemplate("echo \"{{v}}\"\n", "t", multiline).ok());
  // raw: is the author's: inserted as it is, and named as written when unknown.
  CHECK(*RenderTemplate("echo \"{{raw:v}}\"", "t", {{"v", "$x"}}) == "echo \"$x\"");
  CHECK_THAT(RenderTemplate("{{raw:nope}}", "t", vars).status().message(), Catch::Contains("'{{raw:nope}}'"));
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

  ScriptedTransport none;
  none.rules = {{"squeue", {0, "", ""}}, {"sacct", {1, "", "sacct: error: Slurm accounting storage is disabled\n"}}};
  SlurmClient no_accounting(none);
  REQUIRE(no_accounting.FindByName({"ss-s-t-a"}).ok());
  REQUIRE(no_accounting.FindByName({"ss-s-t-a"}).ok());
  CHECK(no_accounting.stats().sacct == 1);  // learned once
}
