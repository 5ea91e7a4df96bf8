// The execution oracle, short form for CI: every construct of template_oracle.h with every
// hostile value, each rendered script run by a real bash in an empty scratch directory. The long
// form is tests/fuzz/template_oracle_fuzz.cc.
#include "tests/template_oracle.h"

#include <catch2/catch.hpp>

#include "base/params.h"
#include "tests/test_util.h"

namespace sweep {
namespace {

using testing::OracleConstructs;
using testing::OracleValues;

// Runs every value of `values` through `c`, as a plain value and as one the study declared text:
// each rendering is refused, or its script creates no file and prints the exact value. A value
// outside the safe alphabet is refused unless declared text, and a text value is refused unless
// its place is one no program reads as code (a variable's value, a comment).
void RunConstruct(const testing::Construct& c, const std::vector<std::string>& values, const testing::TempDir& work,
                  int* runs, int* text_runs) {
  std::string tmpl = testing::Script(c.code);
  Status load = slurm::CheckTemplateContexts(tmpl, "oracle.sbatch");
  INFO("construct: " << c.name << "\n" << c.code);
  if (c.unsafe) {
    // Refused at load, naming file, line and the rewrite, whatever the values.
    CHECK_FALSE(load.ok());
    CHECK_THAT(load.message(), Catch::StartsWith("oracle.sbatch:") && Catch::Contains("placeholder '{{v}}'"));
    for (const auto& v : values) {
      for (bool text : {false, true}) {
        auto o = testing::CheckRendered(tmpl, v, {}, work.path(), text);
        INFO("value: '" << testing::Printable(v) << "'" << o.failure);
        CHECK(o.refused);
      }
    }
    return;
  }
  // An ordinary idiom is not refused for its place.
  CHECK(load.ok());
  if (!load.ok()) {
    UNSCOPED_INFO(load.message());
    return;
  }
  bool data_place = slurm::CheckTemplateContexts(tmpl, "oracle.sbatch", {.text = {"v"}, .option = {}, .path = {}}).ok();
  for (const auto& v : values) {
    for (bool text : {false, true}) {
      auto o = testing::CheckRendered(tmpl, v, testing::Expected(c, v), work.path(), text);
      INFO("value: '" << testing::Printable(v) << "'" << (text ? " (declared text)" : ""));
      CHECK(o.failure == "");
      if (!IsSafeValue(v) && !(text && data_place)) CHECK(o.refused);
      if (!o.refused) ++*(text && !IsSafeValue(v) ? text_runs : runs);
    }
  }
}

TEST_CASE("oracle: every rendered script keeps every hostile value literal, or is refused", "[slurm][oracle]") {
  testing::TempDir work;
  auto values = OracleValues();
  for (auto& v : testing::AlphabetValues(20, 7)) values.push_back(v);
  int runs = 0, text_runs = 0;
  for (const auto& c : OracleConstructs()) RunConstruct(c, values, work, &runs, &text_runs);
  // Most places run the alphabet's values; the hostile ones reach only a variable's value or a
  // comment, declared text, and are run there.
  CHECK(runs > 1500);
  CHECK(text_runs > 250);
}

TEST_CASE("oracle: no hostile value runs in an interpreter a script feeds", "[slurm][oracle]") {
  testing::TempDir work;
  auto values = OracleValues();
  for (auto& v : testing::AlphabetValues(40, 11)) values.push_back(v);
  int runs = 0, text_runs = 0;
  for (const auto& c : testing::InterpreterConstructs()) {
    RunConstruct(c, values, work, &runs, &text_runs);
    // Each of these places hands the text to a program: a value declared text is refused there.
    CHECK_FALSE(slurm::CheckTemplateContexts(testing::Script(c.code), "oracle.sbatch",
                                             {.text = {"v"}, .option = {}, .path = {}})
                    .ok());
  }
  CHECK(runs > 500);
  CHECK(text_runs == 0);
}

TEST_CASE("oracle: no option value runs a command or writes outside the trial's directory", "[slurm][oracle]") {
  testing::TempDir work;
  std::string outside = (work.path() / "scratch").string();
  std::vector<std::string> values = testing::OptionValues(outside);
  for (auto& v : testing::AlphabetValues(10, 17)) values.push_back(v);
  int runs = 0, declared_runs = 0;
  for (const auto& c : testing::OptionConstructs()) {
    std::string tmpl = testing::Script(c.code);
    INFO("construct: " << c.name << "\n" << c.code);
    REQUIRE(slurm::CheckTemplateContexts(tmpl, "oracle.sbatch").ok());
    // A value declared an option may stand only after `--` or as --flag={{v}}.
    slurm::DeclaredValues option{.text = {}, .option = {"v"}, .path = {}};
    Status declared_place = slurm::CheckTemplateContexts(tmpl, "oracle.sbatch", option);
    CHECK(declared_place.ok() == c.option_place);
    if (!c.option_place) {
      CHECK_THAT(declared_place.message(), Catch::Contains("oracle.sbatch:") && Catch::Contains("declared an option") &&
                                               Catch::Contains("after '--'"));
    }
    bool canary = false;
    for (const auto& v : values) {
      for (bool as_option : {false, true}) {
        auto o = testing::CheckOptionRun(tmpl, v, work.path(), as_option ? option : slurm::DeclaredValues{});
        INFO("value: '" << v << "'" << (as_option ? " (declared an option)" : ""));
        CHECK(o.failure == "");
        // Negative numbers are no option: they pass wherever the template puts them.
        if (IsNumberText(v)) CHECK(o.refused == (as_option && !c.option_place));
        if (!o.refused) ++*(as_option ? &declared_runs : &runs);
      }
      // The same value put in verbatim ({{raw:v}}, unchecked): some value of the list must do harm,
      // or this construct proves nothing.
      if (c.harmful) {
        std::string raw = tmpl;
        raw.replace(raw.find("{{v}}"), 5, "{{raw:v}}");
        canary = canary || !testing::CheckOptionRun(raw, v, work.path(), {}).failure.empty();
      }
    }
    if (c.harmful) CHECK(canary);
  }
  CHECK(runs > 150);
  CHECK(declared_runs > 60);
}

TEST_CASE("a text value stands only as a variable's value or in a comment", "[slurm][oracle]") {
  auto render = [](const std::string& tmpl) {
    return slurm::RenderTemplate(tmpl, "t.sbatch", {{"v", "it's $(touch X)"}},
                                 {.text = {"v"}, .option = {}, .path = {}});
  };
  CHECK(render("#!/bin/bash\nV={{v}}\n").ok());
  CHECK(render("#!/bin/bash\nV=\"pre {{v}}\"\n").ok());
  CHECK(render("#!/bin/bash\nexport V={{v}}\n").ok());
  CHECK(render("#!/bin/bash\nA=1 V='{{v}}' ./train \"$V\"\n").ok());
  CHECK(render("#!/bin/bash\n# note {{v}}\n").ok());
  for (const char* tmpl : {"train --x {{v}}\n", "echo \"{{v}}\"\n", "cat <<EOF\n{{v}}\nEOF\n", "local V={{v}}\n",
                           "declare -n V={{v}}\n", "export -n V={{v}}\n", "V=$(echo {{v}})\n", "a=({{v}})\n"}) {
    INFO(tmpl);
    auto r = render(tmpl);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(),
               Catch::Contains("t.sbatch:") && Catch::Contains("declared text") && Catch::Contains("V={{v}}"));
  }
  // Undeclared, the same value is refused anywhere, naming the character.
  auto plain = slurm::RenderTemplate("V={{v}}\n", "t.sbatch", {{"v", "a b"}});
  REQUIRE_FALSE(plain.ok());
  CHECK_THAT(plain.status().message(),
             Catch::Contains("t.sbatch:1") && Catch::Contains("' ' (a blank)") && Catch::Contains("not declared text"));
}

TEST_CASE("a value its place cannot carry is refused, naming the place", "[slurm][oracle]") {
  // (The values are declared text, so that the renderer's place checks, its second layer, are reached.)
  auto render = [](const std::string& tmpl, const std::string& v) {
    return slurm::RenderTemplate(tmpl, "t.sbatch", {{"v", v}}, {.text = {"v"}, .option = {}, .path = {}});
  };
  // A line break in a comment would run the rest of the value.
  auto comment = render("#!/bin/bash\n# lr: {{v}}\n", "x\ntouch PWNED");
  REQUIRE_FALSE(comment.ok());
  CHECK_THAT(comment.status().message(),
             Catch::Contains("t.sbatch:2") && Catch::Contains("comment") && Catch::Contains("line break"));
  // A here-document line equal to the delimiter would end it early. (A text value may not stand in
  // a here-document at all: these values are of the alphabet, undeclared.)
  auto plain = [](const std::string& tmpl, const std::string& v) {
    return slurm::RenderTemplate(tmpl, "t.sbatch", {{"v", v}});
  };
  auto delim = plain("cat <<EOF\n{{v}}\nEOF\n", "EOF");
  REQUIRE_FALSE(delim.ok());
  CHECK_THAT(delim.status().message(), Catch::Contains("t.sbatch:2") && Catch::Contains("delimiter"));
  CHECK_FALSE(plain("cat <<-EOF\n\t{{v}}\nEOF\n", "EOF").ok());
  CHECK(plain("cat <<EOF\n{{v}}\nEOF\n", "EOFX").ok());
  CHECK_FALSE(render("cat <<EOF\n{{v}}\nEOF\n", "EOFX").ok());
  // <<- strips leading tabs: a value starting with one would lose it.
  CHECK_FALSE(render("cat <<-EOF\n{{v}}\nEOF\n", "\tx").ok());
  // Where a backslash escapes, a multibyte locale could read it as the second byte of a character.
  auto gbk = render("V=\"{{v}}\"\n", "\xc3\xa9\\x");
  REQUIRE_FALSE(gbk.ok());
  CHECK_THAT(gbk.status().message(), Catch::Contains("GBK"));
  CHECK(render("V='{{v}}' W={{v}}\n", "\xc3\xa9\\x").ok());
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
