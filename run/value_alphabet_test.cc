// The safe alphabet of template values (base/params.h, README: Templates), as a study meets it:
// a value outside it is refused when the study is loaded, naming file, line and key, unless the
// study declares the parameter text; a text parameter then stands only where no program reads it
// as code; and a tpe study's list values are rendered at load, since it has no trials yet.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <random>

#include "base/params.h"
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
// blanks, line breaks, control bytes and multibyte UTF-8.
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
    if (!IsSafeValue(v)) out.push_back(v);
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
    if (v == "sgd") continue;
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
