// The execution oracle, short form for CI: every construct of template_oracle.h with every
// hostile value, each rendered script run by a real bash in an empty scratch directory. The long
// form is tests/fuzz/template_oracle_fuzz.cc.
#include "tests/template_oracle.h"

#include <catch2/catch.hpp>

#include "tests/test_util.h"

namespace sweep {
namespace {

using testing::OracleConstructs;
using testing::OracleValues;

TEST_CASE("oracle: every rendered script keeps every hostile value literal, or is refused", "[slurm][oracle]") {
  testing::TempDir work;
  auto values = OracleValues();
  int runs = 0, refused_values = 0;
  for (const auto& c : OracleConstructs()) {
    std::string tmpl = testing::Script(c.code);
    Status load = slurm::CheckTemplateContexts(tmpl, "oracle.sbatch");
    INFO("construct: " << c.name << "\n" << c.code);
    if (c.unsafe) {
      // Refused at load, naming file, line and the rewrite, whatever the values.
      CHECK_FALSE(load.ok());
      CHECK_THAT(load.message(), Catch::StartsWith("oracle.sbatch:") && Catch::Contains("placeholder '{{v}}'"));
      for (const auto& v : values) {
        // Were one rendered, bash shows what it would do with the value.
        auto o = testing::CheckRendered(tmpl, v, {}, work.path());
        INFO("value: '" << testing::Printable(v) << "'" << o.failure);
        CHECK(o.refused);
      }
      continue;
    }
    // An ordinary idiom is not refused for its place.
    CHECK(load.ok());
    if (!load.ok()) {
      UNSCOPED_INFO(load.message());
      continue;
    }
    for (const auto& v : values) {
      auto o = testing::CheckRendered(tmpl, v, testing::Expected(c, v), work.path());
      ++runs;
      refused_values += o.refused;
      INFO("value: '" << testing::Printable(v) << "'");
      CHECK(o.failure == "");
    }
  }
  // Most renderings are run, not refused: the oracle is exercised.
  CHECK(runs > 3000);
  CHECK(refused_values < runs / 10);
}

TEST_CASE("a value its place cannot carry is refused, naming the place", "[slurm][oracle]") {
  auto render = [](const std::string& tmpl, const std::string& v) {
    return slurm::RenderTemplate(tmpl, "t.sbatch", {{"v", v}});
  };
  // A line break in a comment would run the rest of the value.
  auto comment = render("#!/bin/bash\n# lr: {{v}}\n", "x\ntouch PWNED");
  REQUIRE_FALSE(comment.ok());
  CHECK_THAT(comment.status().message(),
             Catch::Contains("t.sbatch:2") && Catch::Contains("comment") && Catch::Contains("line break"));
  // A here-document line equal to the delimiter would end it early.
  auto delim = render("cat <<EOF\n{{v}}\nEOF\n", "EOF");
  REQUIRE_FALSE(delim.ok());
  CHECK_THAT(delim.status().message(), Catch::Contains("t.sbatch:2") && Catch::Contains("delimiter"));
  CHECK_FALSE(render("cat <<-EOF\n\t{{v}}\nEOF\n", "EOF").ok());
  CHECK(render("cat <<EOF\n{{v}}\nEOF\n", "EOFX").ok());
  // <<- strips leading tabs: a value starting with one would lose it.
  CHECK_FALSE(render("cat <<-EOF\n{{v}}\nEOF\n", "\tx").ok());
  CHECK(render("cat <<-EOF\nv={{v}}\nEOF\n", "\tx").ok());
  // Where a backslash escapes, a multibyte locale could read it as the second byte of a character.
  auto gbk = render("echo \"{{v}}\"\n", "\xc3\xa9\\x");
  REQUIRE_FALSE(gbk.ok());
  CHECK_THAT(gbk.status().message(), Catch::Contains("GBK"));
  CHECK(render("echo '{{v}}' {{v}}\n", "\xc3\xa9\\x").ok());
}

TEST_CASE("a refused place names the file, line, place and the safe rewrite", "[slurm][oracle]") {
  Status st = slurm::CheckTemplateContexts("#!/bin/bash\nset -e\nX=`echo {{lr}}`\n", "job.sbatch");
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::StartsWith("job.sbatch:3: placeholder '{{lr}}'") && Catch::Contains("backquote") &&
                               Catch::Contains("LR={{lr}}") && Catch::Contains("\"$LR\""));
  // After a construct the reader cannot follow, nothing is accepted.
  Status lost = slurm::CheckTemplateContexts("x=\"${a:-'}\"\necho {{lr}}\n", "job.sbatch");
  REQUIRE_FALSE(lost.ok());
  CHECK_THAT(lost.message(), Catch::Contains("job.sbatch:2") && Catch::Contains("after line 1"));
  // {{raw:...}} stays the author's choice.
  CHECK(slurm::CheckTemplateContexts("X=`echo {{raw:lr}}`\n", "job.sbatch").ok());
}

TEST_CASE("the shipped templates are accepted as they are", "[slurm][oracle]") {
  for (std::string name : {"megatron-gpt.sbatch", "megatron-replay.sbatch", "mlp-train.sbatch", "torchrun.sbatch"}) {
    std::string path = std::string(SLURMSWEEP_SOURCE_DIR) + "/templates/" + name;
    INFO(path);
    Status st = slurm::CheckTemplateContexts(testing::ReadAll(path), path);
    CHECK(st.message() == "");
  }
}

}  // namespace
}  // namespace sweep
