// The study's template checked with the renderer the run loop uses (CheckStudyTemplate), after
// the study module has read it: refusals name the template's file and line; an unused parameter
// is a warning.
#include <catch2/catch.hpp>

#include "run/trial_script.h"
#include "study/loader.h"
#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::run;

namespace {

std::string MinimalStudy() {
  return "[study]\nname = \"t1\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n\n"
         "[job]\ntemplate = \"job.sbatch\"\n\n[space]\nlr = [0.1, 0.01]\nopt = [\"sgd\", \"adam\"]\n";
}

// A study file beside its template, parsed and then checked as the application does.
struct StudyDir {
  testing::TempDir dir;
  StudyDir(const std::string& tmpl = "#!/bin/bash\ntrain --lr {{lr}} --opt {{opt}} --trial {{trial}}\n") {
    testing::WriteAll(dir.file("job.sbatch"), tmpl);
  }
  Result<study::Study> Load(const std::string& text) {
    auto s = study::ParseStudy(text, dir.file("study.toml"));
    if (!s.ok()) return s;
    if (Status st = CheckStudyTemplate(*s); !st.ok()) return st;
    return s;
  }
};

}  // namespace

TEST_CASE("a [space] parameter the template never names is a warning: its trials would be the same job",
          "[study][render]") {
  StudyDir d("#!/bin/bash\ntrain --lr {{lr}}\n");
  auto s = d.Load(MinimalStudy());
  REQUIRE(s.ok());
  REQUIRE(s->warnings.size() == 1);
  CHECK_THAT(s->warnings[0], Catch::Contains("study.toml:13: [space] parameter 'opt' is not used by") &&
                                 Catch::Contains("the same job"));
  StudyDir all;
  auto fine = all.Load(MinimalStudy());
  REQUIRE(fine.ok());
  CHECK(fine->warnings.empty());
}

TEST_CASE("template placeholders are checked before anything runs", "[study][render]") {
  StudyDir d("#!/bin/bash\necho ok\ntrain --lr {{lr}} --typo {{optt}}\n");
  auto s = d.Load(MinimalStudy());
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(), Catch::Contains("job.sbatch:3") && Catch::Contains("optt"));

  StudyDir unbalanced("#!/bin/bash\ntrain --lr {{lr\n");
  auto u = unbalanced.Load(MinimalStudy());
  REQUIRE_FALSE(u.ok());
  CHECK_THAT(u.status().message(), Catch::Contains("job.sbatch:2"));
}

TEST_CASE("monitor = true is refused at load for a template the shell sampler cannot go into", "[study][render]") {
  auto with = [](const std::string& keys) {
    std::string text = MinimalStudy();
    text.replace(text.find("\n\n[space]"), 0, "\n" + keys);
    return text;
  };
  StudyDir py("#!/usr/bin/env python3\n# {{lr}} {{opt}}\nimport os\n");
  auto s = py.Load(with("monitor = true"));
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(), Catch::Contains("study.toml:10: key 'job.monitor'") &&
                                       Catch::Contains("job.sbatch:1") && Catch::Contains("'python3'"));
  CHECK(py.Load(MinimalStudy()).ok());  // without monitor the same template is fine

  StudyDir sh;
  auto ok = sh.Load(with("monitor = true\nmonitor_interval_s = 2"));
  REQUIRE(ok.ok());
  CHECK(ok->job.monitor);
  CHECK(ok->job.monitor_interval_s == 2);
  CHECK(sh.Load(MinimalStudy())->job.monitor_interval_s == 10);
  // An interval without monitor would silently sample nothing: refused.
  auto off = sh.Load(with("monitor_interval_s = 2"));
  REQUIRE_FALSE(off.ok());
  CHECK_THAT(off.status().message(), Catch::Contains("study.toml:10: key 'job.monitor_interval_s'"));
  auto zero = sh.Load(with("monitor = true\nmonitor_interval_s = 0"));
  REQUIRE_FALSE(zero.ok());
  CHECK_THAT(zero.status().message(), Catch::Contains("job.monitor_interval_s"));
}
