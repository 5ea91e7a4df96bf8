// The safe alphabet of template values (base/params.h, README: Templates), as a study meets it:
// a value outside it is refused when the study is loaded, naming file, line and key, unless the
// study declares the parameter text; a text parameter then stands only where no program reads it
// as code; and a tpe study's list values are rendered at load, since it has no trials yet.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "base/params.h"
#include "results/study_trials.h"
#include "run/trial_script.h"
#include "study/loader.h"
#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::run;

namespace {

struct StudyDir {
  testing::TempDir dir;
  explicit StudyDir(const std::string& tmpl) { testing::WriteAll(dir.file("job.sbatch"), tmpl); }
  Result<study::Study> Load(const std::string& text) {
    auto s = study::ParseStudy(text, dir.file("study.toml"));
    if (!s.ok()) return s;
    if (Status st = CheckStudyTemplate(*s); !st.ok()) return st;
    return s;
  }
};

// Lines 1-8; what follows starts at line 9.
std::string Head(const std::string& sampler = "grid") {
  return "[study]\nname = \"t1\"\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n"
         "[job]\ntemplate = \"job.sbatch\"\n[search]\nsampler = \"" +
         sampler + "\"\n" + (sampler == "grid" ? "" : "trials = 4\n");
}

// A TOML basic string holding `s` exactly.
std::string TomlString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Random strings with at least one character outside the safe alphabet: printable ASCII,
// blanks, line breaks, control bytes and multibyte UTF-8; none an option or a path leaving its place.
std::vector<std::string> UnsafeStrings(size_t n, uint32_t seed) {
  static const std::vector<std::string> kExtra = {"\t",   "\n",       "\r",           "\x01",
                                                  "\x7f", "\xc3\xa9", "\xe2\x80\xae", "\xf0\x9f\x92\xa5"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  while (out.size() < n) {
    std::string v;
    size_t len = std::uniform_int_distribution<size_t>(1, 12)(rng);
    for (size_t k = 0; k < len; ++k) {
      if (std::uniform_int_distribution<int>(0, 5)(rng) == 0) {
        v += kExtra[std::uniform_int_distribution<size_t>(0, kExtra.size() - 1)(rng)];
      } else {
        v.push_back(static_cast<char>(std::uniform_int_distribution<int>(0x20, 0x7e)(rng)));
      }
    }
    // (Its shape is the other property's: an option or a path must be declared, text or not.)
    if (!IsSafeValue(v) && ValueShapeProblem(v, false, false).empty()) out.push_back(v);
  }
  return out;
}

}  // namespace

TEST_CASE("property: a value outside the safe alphabet is refused at load unless declared text", "[study][alphabet]") {
  StudyDir d("#!/bin/bash\nOPT={{opt}}\nEXTRA={{extra}}\ntrain --lr {{lr}} --opt \"$OPT\" $EXTRA\n");
  int checked = 0;
  for (const std::string& v : UnsafeStrings(300, 2026)) {
    INFO("value: " << TomlString(v));
    std::string vars = "[job.vars]\nextra = \"x\"\n";
    // Line 9 on: a plain list, then the same value declared text.
    auto plain = d.Load(Head() + vars + "[space]\nlr = [0.1]\nopt = [\"sgd\", " + TomlString(v) + "]\n");
    REQUIRE_FALSE(plain.ok());
    CHECK_THAT(plain.status().message(), Catch::StartsWith(d.dir.file("study.toml") + ":14: key 'space.opt'") &&
                                             Catch::Contains("safe alphabet") && Catch::Contains("text = true"));
    auto text = d.Load(Head() + vars + "[space]\nlr = [0.1]\nopt = { values = [\"sgd\", " + TomlString(v) +
                       "], text = true }\n");
    INFO(text.status().message());
    REQUIRE(text.ok());
    CHECK(text->space[1].text);
    // [job.vars] the same way.
    auto var = d.Load(Head() + "[job.vars]\nextra = " + TomlString(v) + "\n[space]\nlr = [0.1]\nopt = [\"sgd\"]\n");
    REQUIRE_FALSE(var.ok());
    CHECK_THAT(var.status().message(),
               Catch::Contains(":11: key 'job.vars.extra'") && Catch::Contains("safe alphabet"));
    auto declared = d.Load(Head() + "[job.vars]\nextra = { value = " + TomlString(v) +
                           ", text = true }\n[space]\nlr = [0.1]\nopt = [\"sgd\"]\n");
    REQUIRE(declared.ok());
    CHECK(declared->job.text_vars.count("extra") == 1);
    ++checked;
  }
  CHECK(checked == 300);
  // Values drawn from the alphabet load as they are, with no declaration.
  std::mt19937 rng(7);
  const std::string chars = "abcXYZ0189._+-,:/=@";
  for (int i = 0; i < 200; ++i) {
    std::string v;
    for (int k = 0; k < 1 + i % 16; ++k) v.push_back(chars[rng() % chars.size()]);
    if (v == "sgd" || !ValueShapeProblem(v, false, false).empty()) continue;  // shapes: the next property
    INFO(v);
    auto s = d.Load(Head() + "[job.vars]\nextra = \"x\"\n[space]\nlr = [0.1]\nopt = [\"sgd\", \"" + v + "\"]\n");
    CHECK(s.ok());
  }
}

TEST_CASE("a parameter declared text may stand only as a variable's value or in a comment", "[study][alphabet]") {
  std::string study = Head() + "[space]\nlr = [0.1]\nopt = { values = [\"it's a b\"], text = true }\n";
  StudyDir arg("#!/bin/bash\n# opt: {{opt}}\ntrain --lr {{lr}} --opt {{opt}}\n");
  auto s = arg.Load(study);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(),
             Catch::Contains("job.sbatch:3: placeholder '{{opt}}' is declared text") && Catch::Contains("OPT={{opt}}"));
  StudyDir doc("#!/bin/bash\npython3 <<EOF\nopt = '{{opt}}'\nEOF\ntrain --lr {{lr}}\n");
  auto d2 = doc.Load(study);
  REQUIRE_FALSE(d2.ok());
  CHECK_THAT(d2.status().message(), Catch::Contains("job.sbatch:3") && Catch::Contains("here-document"));
  StudyDir assigned("#!/bin/bash\n# opt: {{opt}}\nOPT={{opt}}\ntrain --lr {{lr}} --opt \"$OPT\"\n");
  CHECK(assigned.Load(study).ok());
  // The typos a user makes: text on numbers, a value list of the wrong shape.
  auto numbers = assigned.Load(Head() + "[space]\nlr = [0.1]\nopt = { values = [1, 2], text = true }\n");
  REQUIRE_FALSE(numbers.ok());
  CHECK_THAT(numbers.status().message(), Catch::Contains(":12: key 'space.opt.text'"));
  auto yes = assigned.Load(Head() + "[space]\nlr = [0.1]\nopt = { values = [\"a\"], text = \"yes\" }\n");
  REQUIRE_FALSE(yes.ok());
  CHECK_THAT(yes.status().message(), Catch::Contains("key 'space.opt.text'") && Catch::Contains("true or false"));
}

TEST_CASE("a tpe study's list values are rendered at load, before anything is proposed", "[study][alphabet]") {
  // "EOF" is in the alphabet, but alone on a here-document line it would end the document.
  StudyDir d("#!/bin/bash\ncat > cfg <<EOF\n{{opt}}\nEOF\ntrain --lr {{lr}} --cfg cfg\n");
  auto s = d.Load(Head("tpe") + "[space]\nlr = { min = 0.001, max = 0.1, log = true }\nopt = [\"sgd\", \"EOF\"]\n");
  REQUIRE(s.ok());
  auto refused = ValueRefusals(*s);
  REQUIRE(refused.size() == 1);
  CHECK(refused.begin()->first == "space.opt = EOF");
  CHECK_THAT(refused.begin()->second, Catch::Contains("job.sbatch:3") && Catch::Contains("delimiter"));
  auto fine = d.Load(Head("tpe") + "[space]\nlr = { min = 0.001, max = 0.1, log = true }\nopt = [\"sgd\", \"adam\"]\n");
  REQUIRE(fine.ok());
  CHECK(ValueRefusals(*fine).empty());
}

TEST_CASE("an unknown placeholder names the closest known one", "[study][alphabet]") {
  StudyDir d("#!/bin/bash\ntrain --lr {{lrr}} --opt {{opt}}\n");
  auto s = d.Load(Head() + "[space]\nlr = [0.1]\nopt = [\"sgd\"]\n");
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(), Catch::Contains("job.sbatch:2") && Catch::Contains("did you mean 'lr'?"));
}

namespace {

// Random alphabet values of the three shapes a study must declare: a leading '-' that is not a
// number, a '..' component (also after '='), a leading '/' (also after '='). Each is one word of
// the safe alphabet, so only its shape is refused.
std::vector<std::pair<std::string, std::string>> ShapedValues(size_t n, uint32_t seed) {
  static const std::string kChars = "abcXYZ0189._+-,:/=@";
  std::mt19937 rng(seed);
  auto word = [&](size_t max) {
    std::string w;
    size_t len = std::uniform_int_distribution<size_t>(1, max)(rng);
    for (size_t k = 0; k < len; ++k) w.push_back(kChars[rng() % kChars.size()]);
    return w;
  };
  std::vector<std::pair<std::string, std::string>> out;  // value, "option" or "path"
  while (out.size() < n) {
    std::string v;
    switch (rng() % 5) {
      case 0:
        v = "-" + word(10);
        break;
      case 1:
        v = word(6) + "/../" + word(6);
        break;
      case 2:
        v = (rng() % 2 ? "../" : "..") + (rng() % 2 ? word(6) : "");
        break;
      case 3:
        v = "/" + word(10);
        break;
      default:
        v = std::string(rng() % 2 ? "x=" : "of=") + (rng() % 2 ? "/" : "../") + word(6);
        break;
    }
    if (!IsSafeValue(v)) continue;
    if (ReadsAsOption(v)) out.emplace_back(v, "option");
    else if (LeavesItsPlace(v)) out.emplace_back(v, "path");
  }
  return out;
}

}  // namespace

TEST_CASE("property: an option or a path that leaves its place is refused at load unless declared; numbers pass",
          "[study][alphabet]") {
  // After `--` and as --flag={{opt}}: the places a declared option may stand.
  StudyDir d("#!/bin/bash\ntrain --lr {{lr}} --opt={{opt}} --extra={{extra}} -- {{opt}} {{extra}}\n");
  int refused = 0;
  for (const auto& [v, shape] : ShapedValues(300, 40)) {
    INFO("value: " << v << " (" << shape << ")");
    std::string vars = "[job.vars]\nextra = \"x\"\n";
    auto plain = d.Load(Head() + vars + "[space]\nlr = [0.1]\nopt = [\"sgd\", \"" + v + "\"]\n");
    REQUIRE_FALSE(plain.ok());
    CHECK_THAT(plain.status().message(), Catch::StartsWith(d.dir.file("study.toml") + ":14: key 'space.opt'") &&
                                             Catch::Contains(shape + " = true"));
    // Declared both ways (a value such as -x/../y has both shapes), it loads and every trial renders.
    auto declared = d.Load(Head() + vars + "[space]\nlr = [0.1]\nopt = { values = [\"sgd\", \"" + v +
                           "\"], option = true, path = true }\n");
    INFO(declared.status().message());
    REQUIRE(declared.ok());
    auto specs = results::ExpandStudy(*declared);
    REQUIRE(specs.ok());
    CHECK(RenderRefusals(*declared, *specs).empty());
    // [job.vars] the same way.
    auto var = d.Load(Head() + "[job.vars]\nextra = \"" + v + "\"\n[space]\nlr = [0.1]\nopt = [\"sgd\"]\n");
    REQUIRE_FALSE(var.ok());
    CHECK_THAT(var.status().message(), Catch::Contains(":11: key 'job.vars.extra'") && Catch::Contains(shape));
    auto var_declared = d.Load(Head() + "[job.vars]\nextra = { value = \"" + v +
                               "\", option = true, path = true }\n[space]\nlr = [0.1]\nopt = [\"sgd\"]\n");
    INFO(var_declared.status().message());
    CHECK(var_declared.ok());
    ++refused;
  }
  CHECK(refused == 300);
  // Numbers, negative ones and exponents included, pass with no declaration, as TOML numbers and as
  // strings, in lists and (random sampler) in a range below zero.
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    double x = -std::ldexp(static_cast<double>(rng() % 100000 + 1), -static_cast<int>(rng() % 60));
    int64_t n = -static_cast<int64_t>(rng() % 1000000);
    std::string as_text = fmt::format("{}", x);
    INFO(as_text << " " << n);
    auto s = d.Load(Head() + "[job.vars]\nextra = \"" + as_text + "\"\n[space]\nlr = [" + as_text + ", " +
                    std::to_string(n) + "]\nopt = [\"" + as_text + "\", \"-1e-3\", \"" + std::to_string(n) + "\"]\n");
    INFO(s.status().message());
    REQUIRE(s.ok());
    auto specs = results::ExpandStudy(*s);
    REQUIRE(specs.ok());
    CHECK(RenderRefusals(*s, *specs).empty());
  }
  auto range = d.Load(Head("random") +
                      "[job.vars]\nextra = \"-0.5\"\n[space]\nlr = { min = -1, max = -0.1 }\n"
                      "opt = [-0.5, -1e-3]\n");
  INFO(range.status().message());
  REQUIRE(range.ok());
  auto drawn = results::ExpandStudy(*range);
  REQUIRE(drawn.ok());
  REQUIRE(drawn->size() == 4);
  for (const TrialSpec& t : *drawn) CHECK(std::get<double>(t.params[0].second) < 0);
  CHECK(RenderRefusals(*range, *drawn).empty());
}

TEST_CASE("a declared option stands only after -- or as an option's value, and a path is normalised",
          "[study][alphabet]") {
  std::string study = Head() + "[space]\nlr = [0.1]\nopt = { values = [\"-x\", \"--y=1\"], option = true }\n";
  StudyDir bare("#!/bin/bash\ntrain --lr {{lr}} {{opt}}\n");
  auto s = bare.Load(study);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(), Catch::Contains("job.sbatch:2: placeholder '{{opt}}' is declared an option") &&
                                       Catch::Contains("after '--'") && Catch::Contains("--flag={{opt}}"));
  // `env --` ends env's options, not train's.
  CHECK_FALSE(StudyDir("#!/bin/bash\nenv -- train {{opt}} --lr {{lr}}\n").Load(study).ok());
  CHECK_FALSE(StudyDir("#!/bin/bash\nOPT={{opt}}\ntrain --lr {{lr}} $OPT\n").Load(study).ok());
  CHECK(StudyDir("#!/bin/bash\ntrain --lr {{lr}} -- {{opt}}\n").Load(study).ok());
  CHECK(StudyDir("#!/bin/bash\ntrain --lr {{lr}} \"--opt={{opt}}\"\nARGS=(--opt={{opt}})\n").Load(study).ok());
  // Paths: normalised at load, so trials and `plan` see what the template gets; a value that
  // normalises to one already given is a duplicate.
  StudyDir paths("#!/bin/bash\ntrain --lr {{lr}} --data {{data}} --out {{out}}\n");
  auto p = paths.Load(Head() +
                      "[job.vars]\ndata = { value = \"/data/./sets//a/../b\", path = true }\n[space]\nlr = "
                      "[0.1]\nout = { values = [\"../runs/x/./y\", \"/abs\"], path = true }\n");
  INFO(p.status().message());
  REQUIRE(p.ok());
  CHECK(p->job.vars.at("data") == "/data/sets/b");
  CHECK(std::get<std::string>(p->space[1].choices[0]) == "../runs/x/y");
  auto dup = paths.Load(Head() +
                        "[job.vars]\ndata = { value = \"/d\", path = true }\n[space]\nlr = [0.1]\nout = "
                        "{ values = [\"a/b\", \"a/./b\"], path = true }\n");
  REQUIRE_FALSE(dup.ok());
  CHECK_THAT(dup.status().message(), Catch::Contains("key 'space.out'") && Catch::Contains("already in the list"));
  // The typos: a declaration on numbers, a table that declares nothing.
  auto numbers = paths.Load(Head() + "[space]\nlr = { values = [0.1], path = true }\n");
  REQUIRE_FALSE(numbers.ok());
  CHECK_THAT(numbers.status().message(), Catch::Contains("key 'space.lr.path'"));
  auto nothing = paths.Load(Head() + "[job.vars]\ndata = { value = \"/d\" }\n[space]\nlr = [0.1]\n");
  REQUIRE_FALSE(nothing.ok());
  CHECK_THAT(nothing.status().message(), Catch::Contains("key 'job.vars.data'") && Catch::Contains("path = true"));
}

TEST_CASE("#SBATCH lines take a value only as an option's value, and never set the log", "[study][alphabet]") {
  std::string study = Head() + "[space]\nlr = [0.1]\nc = [\"a100\"]\n";
  StudyDir whole("#!/bin/bash\n#SBATCH {{c}}\ntrain --lr {{lr}}\n");
  auto s = whole.Load(study);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(), Catch::Contains("job.sbatch:2: placeholder '{{c}}'") && Catch::Contains("#SBATCH"));
  CHECK_FALSE(StudyDir("#!/bin/bash\n#SBATCH -C {{c}}\ntrain --lr {{lr}}\n").Load(study).ok());
  CHECK(StudyDir("#!/bin/bash\n#SBATCH --constraint={{c}}\ntrain --lr {{lr}}\n").Load(study).ok());
  // A second option on the line is read too.
  auto second = StudyDir("#!/bin/bash\n#SBATCH --mem=1G --output=/tmp/x\ntrain --lr {{lr}}\n").Load(study);
  REQUIRE_FALSE(second.ok());
  CHECK_THAT(second.status().message(), Catch::Contains("job.sbatch:2") && Catch::Contains("sets output"));
  // {{raw:...}} is the author's, but its rendered directive may not move the log either.
  std::string raw = Head() +
                    "[space]\nlr = [0.1]\nc = { values = [\"--output=/tmp/elsewhere\"], option = true, "
                    "path = true }\n";
  auto r = StudyDir("#!/bin/bash\n#SBATCH {{raw:c}}\ntrain --lr {{lr}}\n").Load(raw);
  REQUIRE(r.ok());
  auto specs = results::ExpandStudy(*r);
  REQUIRE(specs.ok());
  auto refused = RenderRefusals(*r, *specs);
  REQUIRE(refused.size() == 1);
  CHECK_THAT(refused.begin()->second, Catch::Contains("(rendered)") && Catch::Contains("sets output"));
}

TEST_CASE("{{raw:...}} may not carry a value declared text", "[study][alphabet]") {
  std::string study = Head() + "[space]\nlr = [0.1]\nopt = { values = [\"a; touch X\"], text = true }\n";
  auto s = StudyDir("#!/bin/bash\nOPT={{opt}}\necho {{raw:opt}}\ntrain --lr {{lr}}\n").Load(study);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(),
             Catch::Contains("job.sbatch:3: placeholder '{{raw:opt}}'") && Catch::Contains("declared text"));
  // The refusal says where "$OPT" may stand, and where not.
  auto doc = StudyDir("#!/bin/bash\npython3 <<EOF\nx = '{{opt}}'\nEOF\n").Load(study);
  REQUIRE_FALSE(doc.ok());
  CHECK_THAT(doc.status().message(), Catch::Contains("OPT={{opt}}") && Catch::Contains("as an argument") &&
                                         Catch::Contains("environment") &&
                                         Catch::Contains("never inside a here-document or a program's text"));
}
