// Start marks: where the lines go in a script, and what a marks file says.
#include "run/job_marks.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::run;

TEST_CASE("the start mark goes after the #SBATCH block, so sbatch still reads every directive", "[marks]") {
  std::string script = "#!/bin/bash\n#SBATCH --job-name=x\n\n# a comment\n#SBATCH --time=5\necho hi\n#SBATCH --late\n";
  std::string out = WithStartMark(script, "/w/logs/t-1.1.out.marks", {"s", "t-1", 1});
  size_t mark = out.find("printf 'start job=");
  REQUIRE(mark != std::string::npos);
  CHECK(out.find("#SBATCH --time=5") < mark);
  CHECK(out.find("echo hi") > mark);
  CHECK(out.rfind("#!/bin/bash\n", 0) == 0);
  CHECK_THAT(out, Catch::Contains(">>'/w/logs/t-1.1.out.marks'"));
  // A script of directives only gets the mark at its end.
  CHECK_THAT(WithStartMark("#!/bin/sh\n#SBATCH -N1", "/m", {"s", "t-1", 1}), Catch::EndsWith(":\n"));
}

TEST_CASE("the start mark, run by sh, records the job id, array task, restart count and host", "[marks]") {
  testing::TempDir dir;
  std::string marks = dir.file("job.out.marks");
  std::string script = WithStartMark("#!/bin/sh\necho body\n", marks, {"my.study", "t-ab12", 3});
  testing::WriteAll(dir.file("job.sh"), script);
  std::string run = "cd " + dir.path().string() +
                    " && env -i PATH=/usr/bin:/bin SLURM_JOB_ID=41 sh job.sh >/dev/null &&" +
                    " env -i PATH=/usr/bin:/bin SLURM_JOB_ID=57 SLURM_ARRAY_JOB_ID=40 SLURM_ARRAY_TASK_ID=3 "
                    "SLURM_RESTART_COUNT=2 sh job.sh >/dev/null";
  REQUIRE(std::system(run.c_str()) == 0);
  auto starts = ParseStartMarks(testing::ReadAll(marks));
  REQUIRE(starts.size() == 2);
  CHECK(starts[0].job_id == "41");
  CHECK(starts[0].restart == 0);
  CHECK_FALSE(starts[0].host.empty());
  CHECK(starts[0].time > 1.7e9);
  CHECK(starts[1].job_id == "40_3");
  CHECK(starts[1].restart == 2);
  // Whose script it is: the study, the trial and the attempt it was submitted as.
  CHECK(starts[1].study == "my.study");
  CHECK(starts[1].trial == "t-ab12");
  CHECK(starts[1].attempt == 3);
}

TEST_CASE("a log is the trial's own only when its last start mark names this study, trial, attempt and job",
          "[marks]") {
  MarkIdentity me{"a", "t-1", 2};
  auto marks = [](std::string text) { return ParseStartMarks(text); };
  // Nothing to say: no marks yet, or marks from before they named their study (same job).
  CHECK(ForeignLogOwner({}, "10", me, 0).empty());
  CHECK(ForeignLogOwner(marks("start job=10 restart=0 host=n1 time=1\n"), "10", me, 0).empty());
  CHECK(ForeignLogOwner(marks("start job=10 restart=0 host=n1 time=1 study=a trial=t-1 attempt=2\n"), "10", me, 0)
            .empty());
  // Slurm ran the job again: the trial's attempt grew, the script's mark still says the one submitted.
  CHECK(ForeignLogOwner(marks("start job=10 restart=1 host=n1 time=1 study=a trial=t-1 attempt=1\n"), "10", me, 1)
            .empty());
  // Another study's job wrote the same path after this trial's job: the log is that job's.
  std::string other = ForeignLogOwner(marks("start job=10 restart=0 host=n1 time=1 study=a trial=t-1 attempt=2\n"
                                            "start job=11 restart=0 host=n2 time=2 study=b trial=t-1 attempt=2\n"),
                                      "10", me, 0);
  CHECK(other == "job 11 of study b, trial t-1, attempt 2");
  CHECK_FALSE(ForeignLogOwner(marks("start job=10 restart=0 host=n1 time=1 study=b trial=t-1 attempt=2\n"), "10", me, 0)
                  .empty());
  CHECK_FALSE(ForeignLogOwner(marks("start job=10 restart=0 host=n1 time=1 study=a trial=t-9 attempt=2\n"), "10", me, 0)
                  .empty());
  CHECK_FALSE(ForeignLogOwner(marks("start job=10 restart=0 host=n1 time=1 study=a trial=t-1 attempt=1\n"), "10", me, 0)
                  .empty());
  // An older mark without a study from another job (an earlier slurmsweep's study on the same path).
  CHECK(ForeignLogOwner(marks("start job=12 restart=0 host=n1 time=1\n"), "10", me, 0) == "job 12");
}

TEST_CASE("a marks file's torn or foreign lines are skipped", "[marks]") {
  auto starts = ParseStartMarks(
      "start job=7 restart=0 host=n1 time=100\n"
      "garbage\n"
      "start job=7 restart=x host=n1 time=101\n"
      "start job=7 restart=1 host=n2 time=200\n"
      "start job=7 restart=2 ho");
  REQUIRE(starts.size() == 2);
  CHECK(starts[1].restart == 1);
  CHECK(starts[1].host == "n2");
  CHECK(starts[1].time == 200);
}
