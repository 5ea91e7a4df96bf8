// The execution oracle, long form: random templates composed of the oracle's constructs inside
// random surroundings (functions, if-blocks, subshells, case arms, $( ), here-documents,
// comments and quotes before them) and random hostile values, each rendered and, if accepted,
// run by bash in an empty scratch directory. Fails (exit 1) on the first rendered script that
// creates a file or prints a value other than the one given; and the option-reading class
// (template_oracle.h: tar, rsync, git, coreutils) with hostile option and path values, failing on a
// value that runs a command or writes outside the trial's directory. Deterministic for a seed.
//
//   build/tests/template_oracle_fuzz [--seconds N] [--seed S] [--show-refused]   (default 60 s, seed 1)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>

#include "base/params.h"
#include "tests/template_oracle.h"

namespace {

using sweep::testing::Construct;

// Surroundings that keep a construct's output: {} is where the construct goes, on lines of its own
// (a here-document's delimiter must stay alone on its line).
const char* kWrappers[] = {
    "{}",
    "if true; then\n{}\nfi",
    "f() {\n{}\n}\nf",
    "(\n{}\n)",
    "{ {}\n}",
    "case x in\n  x) {}\n  ;;\nesac",
    "while true; do\n{}\nbreak; done",
    "for i in 1; do {}\ndone",
    "{\n{}\n} | cat",
};

// Lines put before a construct: syntax that a naive reader gets wrong.
const char* kPreambles[] = {
    "",
    "# it's a comment with \"quotes\" and `backquotes` and $(subst)",
    "n=$((1<<20)); m=$(( (2+3) * 4 ))",
    "cat >/dev/null <<'X'\nit's ` $( \" here\nX",
    "cat >/dev/null <<-Y\n\tunbalanced ' \" `echo hi`\n\tY",
    "x=$(case a in a) echo 'a)';; esac)",
    "y=`echo \"hi\"`",
    "arr=(1 2 \"3 4\" '5)')",
    "[[ a == a && ( b == b ) ]] && :",
    "z=\"${HOME:-/}\" w='(' v=\")\"",
    "echo a#b >/dev/null # trailing",
    ": <<< 'here string <<EOF'",
    "declare -a list=(a b)",
    "s='it'\\''s'",
    "printf '%s' \"$(printf '%s' \"$(echo nested)\")\" >/dev/null",
};

const char* kTokens[] = {"$(touch PWNED)",
                         "`touch PWNED`",
                         ";touch PWNED;",
                         "'",
                         "\"",
                         "\\",
                         "\n",
                         "\r",
                         "EOF",
                         "$",
                         "(",
                         ")",
                         "{",
                         "}",
                         "[",
                         "]",
                         "*",
                         "?",
                         "~",
                         "#",
                         "!",
                         "&",
                         "|",
                         "<",
                         ">",
                         " ",
                         "\t",
                         "%s",
                         "\u00e9",
                         "\xF0\x9F\x92\xA5",
                         "$'\\n'",
                         "${x}",
                         "a[$(touch PWNED)]",
                         "--",
                         "-n",
                         "esac",
                         ";;",
                         "A"};

std::string Mutate(std::mt19937& rng, const std::vector<std::string>& corpus) {
  std::string v = corpus[rng() % corpus.size()];
  if (v.size() > 1000) return v;
  int edits = static_cast<int>(rng() % 4);
  for (int k = 0; k < edits; ++k) {
    const char* t = kTokens[rng() % (sizeof(kTokens) / sizeof(*kTokens))];
    size_t at = v.empty() ? 0 : rng() % (v.size() + 1);
    // Study values come from TOML, which is valid UTF-8: never split a character.
    while (at < v.size() && (static_cast<unsigned char>(v[at]) & 0xC0) == 0x80) ++at;
    v.insert(at, t);
  }
  return v;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 60;
  unsigned seed = 1;
  bool show = false;  // --show-refused: print templates refused without a known unsafe construct
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--show-refused")) show = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed")) seed = static_cast<unsigned>(std::atoi(argv[i + 1]));
  }
  std::mt19937 rng(seed);
  auto constructs = sweep::testing::OracleConstructs();
  for (auto& c : sweep::testing::InterpreterConstructs()) constructs.push_back(c);
  auto corpus = sweep::testing::OracleValues();
  char tmpl_dir[] = "/tmp/oracle-fuzz-XXXXXX";
  std::filesystem::path work = mkdtemp(tmpl_dir);
  auto start = std::chrono::steady_clock::now();
  long runs = 0, refused_templates = 0, refused_values = 0, over_refused = 0;
  auto option_constructs = sweep::testing::OptionConstructs();
  auto option_values = sweep::testing::OptionValues((work / "scratch").string());
  long option_runs = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    // One run in eight: the option-reading class, a random alphabet value made to begin with '-'
    // or '/', or to climb with '..', or a hostile option value, undeclared or declared an option.
    if (rng() % 8 == 0) {
      const auto& c = option_constructs[rng() % option_constructs.size()];
      std::string value =
          rng() % 2 ? option_values[rng() % option_values.size()] : sweep::testing::AlphabetValues(1, rng())[0];
      const char* shapes[] = {"-", "--", "../", "/", "x/../", "of=../", ""};
      value.insert(0, shapes[rng() % (sizeof(shapes) / sizeof(*shapes))]);
      sweep::slurm::DeclaredValues declared;
      if (rng() % 2) declared.option = {"v"};
      auto o = sweep::testing::CheckOptionRun(sweep::testing::Script(c.code), value, work, declared);
      ++option_runs;
      if (!o.failure.empty()) {
        std::cerr << "FAIL (seed " << seed << ", option run " << option_runs << "): value '" << value << "' in "
                  << c.name << ": " << o.failure << "\n";
        return 1;
      }
      continue;
    }
    // One or two constructs, each in a wrapper, after a preamble.
    int n = 1 + static_cast<int>(rng() % 2);
    std::string body;
    std::vector<const Construct*> used;
    bool unsafe = false;
    for (int k = 0; k < n; ++k) {
      const Construct& c = constructs[rng() % constructs.size()];
      // Its quote is closed by whatever follows it here: unsafe only at the end of a template.
      if (c.name == "unterminated quote") continue;
      used.push_back(&c);
      unsafe = unsafe || c.unsafe;
      body += kPreambles[rng() % (sizeof(kPreambles) / sizeof(*kPreambles))];
      body += "\n";
      body += Replace(kWrappers[rng() % (sizeof(kWrappers) / sizeof(*kWrappers))], "{}", c.code);
      body += "\n";
    }
    std::string tmpl = sweep::testing::Script(body);
    if (auto st = sweep::slurm::CheckTemplateContexts(tmpl, "fuzz.sbatch"); !st.ok()) {
      ++refused_templates;
      over_refused += !unsafe;
      if (show && !unsafe) std::cerr << "refused:\n" << tmpl << "--> " << st.message() << "\n\n";
      continue;
    }
    if (unsafe) {
      std::cerr << "FAIL: a template with a known unsafe construct was accepted\n" << tmpl << "\n";
      return 1;
    }
    // A hostile value (declared text or not), or one of the safe alphabet, which every place must
    // carry as data: the two layers of README's template invariant.
    bool text = rng() % 2;
    std::string value = rng() % 3 ? Mutate(rng, corpus) : sweep::testing::AlphabetValues(1, rng())[0];
    std::vector<std::string> expect;
    for (const Construct* c : used) {
      for (auto& e : sweep::testing::Expected(*c, value)) expect.push_back(e);
    }
    auto o = sweep::testing::CheckRendered(tmpl, value, expect, work, text);
    ++runs;
    refused_values += o.refused;
    bool data_place =
        sweep::slurm::CheckTemplateContexts(tmpl, "fuzz.sbatch", {.text = {"v"}, .option = {}, .path = {}}).ok();
    if (!used.empty() && !o.refused && !sweep::IsSafeValue(value) && !(text && data_place)) {
      std::cerr << "FAIL (seed " << seed << ", run " << runs << "): value '" << sweep::testing::Printable(value)
                << "' outside the safe alphabet was rendered"
                << (text ? " (declared text) in a place a program reads" : "") << "\n"
                << tmpl << "\n";
      return 1;
    }
    if (!o.failure.empty()) {
      std::cerr << "FAIL (seed " << seed << ", run " << runs << "): value '" << sweep::testing::Printable(value)
                << "': " << o.failure << "\n";
      return 1;
    }
  }
  std::filesystem::remove_all(work);
  std::printf(
      "template_oracle_fuzz: %ld scripts run, %ld values refused, %ld templates refused (%ld without a known "
      "unsafe construct), %ld option-reading runs, no failure\n",
      runs, refused_values, refused_templates, over_refused, option_runs);
  return 0;
}
