// The execution oracle for template rendering: shell constructs with a placeholder, hostile
// values, and a check that runs each rendered script with a real bash in an empty scratch
// directory. A rendering is right when it is refused, or when the script creates no file and
// prints the exact value wherever the construct prints it. Used by the short CI test
// (template_oracle_test.cc: every construct x every value) and by the long fuzz run
// (fuzz/template_oracle_fuzz.cc: random compositions and mutated values).
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "slurm/sbatch_script.h"

namespace sweep::testing {

struct Construct {
  std::string name;
  std::string code;  // bash lines with {{v}}
  // The script's output must hold prefix + value + suffix (unless `fixed`: prefix alone).
  bool prints = true;
  std::string prefix = "<<", suffix = ">>";
  bool fixed = false;
  // Known unsafe: the renderer must refuse the template at load, whatever the value.
  bool unsafe = false;
};

inline std::vector<Construct> OracleConstructs() {
  auto ok = [](std::string name, std::string code, std::string prefix = "<<", std::string suffix = ">>") {
    return Construct{std::move(name), std::move(code), true, std::move(prefix), std::move(suffix), false, false};
  };
  auto fixed = [](std::string name, std::string code) {
    return Construct{std::move(name), std::move(code), true, "<<ok>>", "", true, false};
  };
  auto bad = [](std::string name, std::string code) {
    return Construct{std::move(name), std::move(code), false, "", "", false, true};
  };
  return {
      ok("unquoted word", "printf '<<%s>>\\n' {{v}}"),
      ok("double quotes", "printf '<<%s>>\\n' \"{{v}}\""),
      ok("single quotes", "printf '<<%s>>\\n' '{{v}}'"),
      ok("part of a word", "printf '<<%s>>\\n' pre{{v}}post", "<<pre", "post>>"),
      ok("double quotes with an apostrophe", "printf '<<%s>>\\n' \"it's {{v}}\"", "<<it's ", ">>"),
      ok("assignment", "X={{v}}\nprintf '<<%s>>\\n' \"$X\""),
      ok("export", "export X={{v}}\nprintf '<<%s>>\\n' \"$X\""),
      ok("local in a function", "f() { local x={{v}}; printf '<<%s>>\\n' \"$x\"; }\nf"),
      ok("function argument", "f() { printf '<<%s>>\\n' \"$1\"; }\nf {{v}}"),
      ok("function body", "f() {\n  printf '<<%s>>\\n' {{v}}\n}\nf"),
      ok("function keyword", "function g { printf '<<%s>>\\n' \"{{v}}\"; }; g"),
      ok("$( ) with double quotes", "x=\"$(printf '%s.' \"{{v}}\")\"\nprintf '<<%s>>\\n' \"${x%.}\""),
      ok("$( ) with a word", "x=$(printf '%s.' {{v}})\nprintf '<<%s>>\\n' \"${x%.}\""),
      ok("nested quotes in $( )", "y=\"$(printf '%s.' \"'{{v}}'\")\"\nprintf '<<%s>>\\n' \"${y%.}\"", "<<'", "'>>"),
      ok("case inside $( )", "x=$(case a in a) printf '%s.' {{v}};; esac)\nprintf '<<%s>>\\n' \"${x%.}\""),
      ok("after arithmetic with <<", "n=$((1<<20))\nprintf '<<%s>>\\n' {{v}}"),
      ok("arithmetic on the same line", "echo $((1<<20)) >/dev/null; printf '<<%s>>\\n' {{v}}"),
      ok("after (( )) with <<", "(( n = 1<<3 ))\nprintf '<<%s>>\\n' {{v}}"),
      ok("here-document", "cat <<EOF\n<<{{v}}>>\nEOF"),
      ok("here-document, quoted delimiter", "cat <<'EOF'\n<<{{v}}>>\nEOF"),
      ok("here-document, double-quoted delimiter", "cat <<\"END\"\n<<{{v}}>>\nEND"),
      ok("here-document, escaped delimiter", "cat <<\\EOF\n<<{{v}}>>\nEOF"),
      ok("here-document <<-", "cat <<-EOF\n\t<<{{v}}>>\n\tEOF"),
      ok("here-document line", "printf '<<'\ncat <<EOF\n{{v}}\nEOF\nprintf '>>\\n'", "<<", "\n>>"),
      ok("here-document line <<-", "printf '<<'\ncat <<-EOF\n{{v}}\n\tEOF\nprintf '>>\\n'", "<<", "\n>>"),
      ok("quoted here-document line", "printf '<<'\ncat <<'EOF'\n{{v}}\nEOF\nprintf '>>\\n'", "<<", "\n>>"),
      ok("two here-documents", "cat <<A <<'B'\n<<{{v}}>>\nA\n<<{{v}}>>\nB"),
      ok("here-document with $HOME before", "cat <<EOF\n${HOME:+h} $(echo x) <<{{v}}>>\nEOF", "<<", ">>"),
      ok("here-string", "printf '<<'; cat <<< {{v}}; printf '>>\\n'", "<<", "\n>>"),
      fixed("comment", "# note: {{v}}\nprintf '<<ok>>\\n'"),
      fixed("#SBATCH comment", "#SBATCH --constraint={{v}}\nprintf '<<ok>>\\n'"),
      fixed("comment with quotes", "# it's a \"comment\" with {{v}} and `x`\nprintf '<<ok>>\\n'"),
      ok("trailing comment", "printf '<<%s>>\\n' {{v}} # {{v}}"),
      ok("# inside a word", "printf '<<%s>>\\n' a#b {{v}}"),
      ok("$# before", "printf '<<%s>>\\n' \"$#\" {{v}}"),
      ok("case subject", "case {{v}} in\n  *) printf '<<%s>>\\n' {{v}} ;;\nesac"),
      ok("case pattern", "case zzz in\n  {{v}}) printf '<<match>>\\n' ;;\n  *) printf '<<%s>>\\n' {{v}} ;;\nesac"),
      ok("case pattern list",
         "case zzz in\n  (a|{{v}}) printf '<<match>>\\n' ;;\n  *) printf '<<%s>>\\n' \"{{v}}\" ;;\nesac"),
      ok("array", "a=({{v}} x)\nprintf '<<%s>>\\n' \"${a[0]}\""),
      ok("array over lines", "a=(\n  \"{{v}}\"\n  y\n)\nprintf '<<%s>>\\n' \"${a[0]}\""),
      ok("array append", "a=()\na+=('{{v}}')\nprintf '<<%s>>\\n' \"${a[0]}\""),
      ok("[[ == ]]", "if [[ \"{{v}}\" == {{v}} ]]; then printf '<<%s>>\\n' {{v}}; fi"),
      ok("[[ -n || -z ]]", "[[ -n {{v}} || -z {{v}} ]] && printf '<<%s>>\\n' {{v}}"),
      ok("[[ =~ ]]", "[[ {{v}} =~ ^zzz ]] || printf '<<%s>>\\n' \"{{v}}\""),
      ok("[ = ]", "if [ {{v}} = {{v}} ]; then printf '<<%s>>\\n' {{v}}; fi"),
      ok("subshell and pipe", "( printf '<<%s>>\\n' {{v}} ) | cat"),
      ok("group", "{ printf '<<%s>>\\n' {{v}}; }"),
      ok("process substitution", "cat <(printf '<<%s>>\\n' {{v}})"),
      ok("line continuation", "printf '<<%s>>\\n' \\\n  {{v}}"),
      ok("for loop", "for x in {{v}}; do printf '<<%s>>\\n' \"$x\"; done"),
      ok("if and while", "while false; do :; done\nif true; then printf '<<%s>>\\n' {{v}}; fi"),
      ok("env wrapper", "env A=1 printf '<<%s>>\\n' {{v}}"),
      ok("exec-style path", "P={{v}}\nprintf '<<%s>>\\n' \"$P\""),
      ok("redirection before", "printf '<<%s>>\\n' {{v}} 2>/dev/null >&1"),
      ok("${ } before", "x=${HOME:-/} ; printf '<<%s>>\\n' \"${x:+}{{v}}\""),
      bad("backquotes", "x=`printf '%s' {{v}}`"),
      bad("double quotes in backquotes", "x=`printf '%s' \"{{v}}\"`"),
      bad("backquotes in double quotes", "x=\"`printf '%s' \"{{v}}\"`\""),
      bad("arithmetic $(( ))", "echo $(( {{v}} + 1 ))"),
      bad("arithmetic (( ))", "(( n = {{v}} ))"),
      bad("arithmetic $[ ]", "echo $[ {{v}} ]"),
      bad("let", "let n={{v}}"),
      bad("declare -i", "declare -i n\nn={{v}}"),
      bad("array subscript", "a[{{v}}]=1"),
      bad("associative array subscript", "declare -A m=([{{v}}]=1)"),
      bad("[[ -eq ]]", "[[ {{v}} -eq 1 ]]"),
      bad("${x:-...}", "printf '%s' \"${UNSET_X:-{{v}}}\""),
      bad("${x:-...} unquoted", "printf '%s' ${UNSET_X:-{{v}}}"),
      bad("${x#...}", "printf '%s' \"${HOME#{{v}}}\""),
      bad("$'...'", "printf '%s' $'{{v}}'"),
      bad("$ before", "printf '%s' ${{v}}"),
      bad("$ before in double quotes", "printf '%s' \"${{v}}\""),
      bad("backslash before", "printf '%s' \\{{v}}"),
      bad("eval", "eval \"printf '%s' {{v}}\""),
      bad("eval words", "eval printf x {{v}}"),
      bad("trap", "trap \"printf '%s' {{v}}\" EXIT"),
      bad("bash -c", "bash -c \"printf '%s' {{v}}\""),
      bad("sh -c single quotes", "sh -c 'echo {{v}}'"),
      bad("python -c", "python3 -c \"print('{{v}}')\""),
      bad("awk program", "awk 'BEGIN { print \"{{v}}\" }'"),
      bad("ssh", "ssh localhost echo {{v}}"),
      bad("xargs", "echo x | xargs {{v}}"),
      bad("command name", "{{v}} --flag"),
      bad("quoted command name", "\"{{v}}\" --flag"),
      bad("exec name", "exec {{v}}"),
      bad("source", "source {{v}}"),
      bad("printf -v", "printf -v {{v}} x"),
      bad("read", "read -r {{v}} </dev/null"),
      bad("unset", "unset {{v}}"),
      bad("export name", "export {{v}}"),
      bad("here-document delimiter", "cat <<{{v}}\nx\nEOF"),
      bad("$( ) in a here-document", "cat <<EOF\n$(printf '%s' {{v}})\nEOF"),
      bad("${ } in a here-document", "cat <<EOF\n${UNSET_X:-{{v}}}\nEOF"),
      bad("backquotes in a here-document", "cat <<EOF\n`printf '%s' {{v}}`\nEOF"),
      bad("$ before in a here-document", "cat <<EOF\n${{v}}\nEOF"),
      bad("unterminated quote", "printf '%s' \"{{v}}"),
      bad("env bash -c", "env bash -c \"printf '%s' {{v}}\""),
      bad("timeout sh -c", "timeout 5 sh -c 'echo {{v}}'"),
  };
}

// The interpreter class: places where the shell hands the text to a program that runs code (bash,
// sh, python3 and perl reading a here-document or here-string, the tests and declarations that
// evaluate array subscripts, a sourced process substitution, printf's format). The shell reads
// back the value exactly; what keeps it data is the safe alphabet (base/params.h), and a value
// declared text must be refused in each of them.
inline std::vector<Construct> InterpreterConstructs() {
  auto ok = [](std::string name, std::string code) {
    return Construct{std::move(name), std::move(code), true, "<<", ">>", false, false};
  };
  auto fixed = [](std::string name, std::string code) {
    return Construct{std::move(name), std::move(code), true, "<<ok>>", "", true, false};
  };
  auto runs = [](std::string name, std::string code) {  // a program of the value's: only nothing may run
    return Construct{std::move(name), std::move(code), false, "", "", false, false};
  };
  return {
      ok("python3 here-document", "python3 <<EOF\nprint('<<{{v}}>>')\nEOF"),
      ok("python3 here-document, double quotes", "python3 - <<'EOF'\nprint(\"<<{{v}}>>\")\nEOF"),
      ok("python3 here-string", "python3 <<< \"print('<<{{v}}>>')\""),
      runs("python3 here-document, bare value", "python3 <<EOF 2>/dev/null\nx = {{v}}\nEOF"),
      ok("perl here-document", "perl <<'EOF'\nprint '<<{{v}}>>', \"\\n\";\nEOF"),
      ok("perl here-string", "perl <<< \"print '<<{{v}}>>', qq(\\n);\""),
      ok("bash here-document", "bash <<EOF\nprintf '<<%s>>\\n' {{v}}\nEOF"),
      ok("sh here-document", "sh <<EOF\necho '<<{{v}}>>'\nEOF"),
      ok("sh here-string", "sh <<< \"echo '<<{{v}}>>'\""),
      ok("bash here-string, bare word", "bash <<< \"printf '<<%s>>\\n' {{v}}\""),
      fixed("[[ -v ]]", "[[ -v {{v}} ]] 2>/dev/null\nprintf '<<ok>>\\n'"),
      fixed("test -v", "test -v {{v}} 2>/dev/null\nprintf '<<ok>>\\n'"),
      fixed("[ -v ]", "[ -v {{v}} ] 2>/dev/null\nprintf '<<ok>>\\n'"),
      fixed("declare -n", "declare -n r={{v}} 2>/dev/null\nx=${r-} 2>/dev/null\nprintf '<<ok>>\\n'"),
      ok("sourced process substitution", "source <(printf 'X=%s\\n' {{v}})\nprintf '<<%s>>\\n' \"$X\""),
      fixed("printf format", "printf {{v}} >/dev/null 2>&1\nprintf '<<ok>>\\n'"),
      ok("printf format, in quotes", "printf '<<'\nprintf -- \"{{v}}\" 2>/dev/null\nprintf '>>\\n'"),
      ok("job wrapper", "timeout 5 printf '<<%s>>\\n' {{v}}"),
  };
}

// Random values drawn from the safe alphabet (base/params.h), the kind a study may give without
// declaring text.
inline std::vector<std::string> AlphabetValues(size_t n, uint32_t seed) {
  static const std::string kChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-,:/=@";
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string v;
    size_t len = std::uniform_int_distribution<size_t>(1, 24)(rng);
    for (size_t k = 0; k < len; ++k)
      v.push_back(kChars[std::uniform_int_distribution<size_t>(0, kChars.size() - 1)(rng)]);
    out.push_back(v);
  }
  return out;
}

// Values hostile in every way a study can make them (no NUL: refused before any rendering).
inline std::vector<std::string> OracleValues() {
  std::vector<std::string> v = {
      "plain",
      "",
      " ",
      "a b",
      "it's",
      "\"q\"",
      "`touch PWNED`",
      "$(touch PWNED)",
      "x;touch PWNED",
      "x&&touch PWNED",
      "x|touch PWNED",
      "x\ntouch PWNED",
      "x\r\ntouch PWNED",
      "\rtouch PWNED",
      "EOF",
      "END",
      "A",
      "B",
      "\tEOF",
      "EOF\ntouch PWNED\nEOF",
      "'; touch PWNED; '",
      "\"; touch PWNED; \"",
      "\\",
      "\\\"$(touch PWNED)",
      "'\"`$(touch PWNED)`\"'",
      "*",
      "?",
      "[a]",
      "~",
      "-n",
      "--help",
      "-e",
      "$HOME",
      "${HOME}",
      "$((1+1))",
      "a[$(touch PWNED)]",
      "!",
      "!!",
      "\u00e9 \U0001F4A5 \u00fc",
      "$'\\x41'",
      "#",
      "# x",
      "}}",
      "{{v}}",
      "%s%n",
      "1<<20",
      ")",
      "(",
      "esac",
      ";;",
      "\\\n",
      "<<EOF",
      "$(",
      "`",
      "'",
      "\"",
      "\t",
      "\n",
      "x\n",
      "\\$(touch PWNED)",
  };
  v.push_back(std::string(100000, 'A') + "$(touch PWNED)`touch PWNED`'\"");
  return v;
}

// Runs `script` with bash in `dir` (which must be empty), stdout to `out`. Returns the exit status.
inline int RunBash(const std::string& script_path, const std::string& dir, const std::string& out) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());
  std::string timeout = "10";
  std::vector<char*> argv = {const_cast<char*>("timeout"),
                             timeout.data(),
                             const_cast<char*>("bash"),
                             const_cast<char*>("--norc"),
                             const_cast<char*>("--noprofile"),
                             const_cast<char*>(script_path.c_str()),
                             nullptr};
  std::vector<std::string> env_s = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C.UTF-8"};
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "timeout", &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string Printable(const std::string& s, size_t max = 80) {
  std::string out;
  for (char c : s.substr(0, max)) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out.push_back(c);
  }
  if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

struct OracleOutcome {
  bool refused = false;  // RenderTemplate refused the value (or the template)
  std::string failure;   // empty: the oracle holds
};

// Renders `tmpl` with v = `value`; if accepted, runs it in a fresh scratch dir under `work`.
// `expect`: what the output must contain (empty: nothing checked).
// `text`: the study declared v text (its values may lie outside the safe alphabet).
inline OracleOutcome CheckRendered(const std::string& tmpl, const std::string& value,
                                   const std::vector<std::string>& expect, const std::filesystem::path& work,
                                   bool text = false) {
  OracleOutcome o;
  slurm::DeclaredValues declared;
  if (text) declared.text = {"v"};
  auto r = slurm::RenderTemplate(tmpl, "oracle.sbatch", {{"v", value}}, declared);
  if (!r.ok()) {
    o.refused = true;
    return o;
  }
  namespace fs = std::filesystem;
  fs::path scratch = work / "scratch";
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  std::string script = (work / "job.sh").string(), out = (work / "out").string();
  {
    std::ofstream f(script, std::ios::binary | std::ios::trunc);
    f << *r;
  }
  int rc = RunBash(script, scratch.string(), out);
  std::ifstream in(out, std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> created;
  for (const auto& e : fs::directory_iterator(scratch)) created.push_back(e.path().filename().string());
  if (!created.empty()) {
    o.failure = "created " + created.front() + " (value ran as code)";
  } else if (rc == 124 || rc == -1) {
    o.failure = "bash did not finish (rc " + std::to_string(rc) + ")";
  } else {
    for (const auto& e : expect) {
      if (got.find(e) == std::string::npos) {
        o.failure = "output lacks '" + Printable(e) + "'; got '" + Printable(got, 200) + "'";
        break;
      }
    }
  }
  if (!o.failure.empty()) o.failure += "\n--- script ---\n" + Printable(*r, 600);
  return o;
}

// The option-reading class: real programs that read options from their arguments (coreutils'
// touch, cp, rm and dd; tar, rsync and git), each given the value where, were it not checked, a
// value of the safe alphabet alone would run a command (tar --to-command=sh, git grep -Osh) or
// write or delete outside the trial's directory (cp -t.., rsync --log-file=../x, git log
// --output=..., dd of=../x, rm ../x). Each script runs in the trial's directory, beside a file
// outside it (CheckOptionRun). `option_place`: the value stands after `--`, as --flag={{v}} or after
// a prefix of its own (./{{v}}), the places a value declared an option may stand. `harmful`: some
// value of OptionValues does harm there when put in unchecked ({{raw:v}}).
struct OptionConstruct {
  std::string name;
  std::string code;
  bool option_place = false;
  bool harmful = true;
};

inline std::vector<OptionConstruct> OptionConstructs() {
  const std::string tar = "printf 'touch PWNED\\n' > f\ntar -cf in.tar f\nrm f\n";
  const std::string git =
      "git init -q repo\nprintf 'touch PWNED\\n' > repo/f\ngit -C repo add f\n"
      "git -C repo -c user.name=a -c user.email=a@b commit -qm m\n";
  return {
      {"touch", "touch {{v}}"},
      {"touch in a path", "touch ./{{v}}.txt", true},
      {"cp to the value", "printf x > f\ncp f {{v}}"},
      {"cp into a directory", "mkdir -p out\nprintf x > f\ncp f out/{{v}}", true},
      {"rm", "rm -f {{v}}"},
      {"rm in a path", "rm -f ./{{v}}", true},
      {"dd operand", "printf x > f\ndd if=f {{v}} status=none"},
      {"tar extract", tar + "tar -xf in.tar {{v}}"},
      {"tar archive name", "printf x > f\ntar -cf {{v}} f"},
      {"rsync", "mkdir -p src\nprintf x > src/f\nrsync -r {{v}} src/ dst/"},
      {"git log", git + "git -C repo log {{v}} >/dev/null"},
      {"git grep", git + "git -C repo grep {{v}} touch >/dev/null"},
      {"touch after --", "touch -- {{v}}", true},
      {"cp after --", "printf x > f\nmkdir -p out\ncp -- f out/{{v}}", true},
      {"tar after --", tar + "tar -xf in.tar -- {{v}}", true, false},
      {"git grep after --", git + "git -C repo grep -e touch -- {{v}} >/dev/null", true, false},
      {"git log --format=", git + "git -C repo log --format={{v}} >/dev/null", true, false},
      {"rsync --exclude=", "mkdir -p src\nprintf x > src/f\nrsync -r --exclude={{v}} src/ dst/", true, false},
  };
}

// Hostile values that use only the safe alphabet, each one word: options that run a command or
// write elsewhere, paths that climb out, absolute paths (into `outside`, so that a write lands
// where it is seen), and the negative numbers that must pass.
inline std::vector<std::string> OptionValues(const std::string& outside) {
  return {"--to-command=sh",
          "-Osh",
          "--open-files-in-pager=sh",
          "--output=../OUT",
          "--output=../../OUT",
          "--log-file=../OUT",
          "--write-batch=../OUT",
          "--target-directory=..",
          "-t..",
          "-C..",
          "--directory=..",
          "of=../OUT",
          "../victim",
          "../OUT",
          "../../OUT",
          "x/../../OUT",
          "..",
          "-rf",
          "--",
          "-",
          "--help",
          "-0.5",
          "-1e-3",
          "-7",
          "plain",
          outside + "/OUT",
          "of=" + outside + "/OUT",
          "--log-file=" + outside + "/OUT",
          "--output=" + outside + "/OUT",
          "--target-directory=" + outside,
          "-C" + outside,
          outside + "/victim"};
}

// Renders `tmpl` with v = `value` (`declared`: what the study declared v) and, if accepted, runs it
// with bash in a fresh trial directory, work/scratch/trial, beside work/scratch/victim. Right when
// refused, or when no file named PWNED appears anywhere (the value ran a command), nothing appears
// in work/scratch but the trial's directory and the victim, and the victim is unchanged.
inline OracleOutcome CheckOptionRun(const std::string& tmpl, const std::string& value,
                                    const std::filesystem::path& work, const slurm::DeclaredValues& declared) {
  OracleOutcome o;
  auto r = slurm::RenderTemplate(tmpl, "oracle.sbatch", {{"v", value}}, declared);
  if (!r.ok()) {
    o.refused = true;
    return o;
  }
  namespace fs = std::filesystem;
  fs::path scratch = work / "scratch", trial = scratch / "trial";
  fs::remove_all(scratch);
  fs::create_directories(trial);
  {
    std::ofstream v(scratch / "victim");
    v << "victim\n";
  }
  std::string script = (work / "job.sh").string(), out = (work / "out").string();
  {
    std::ofstream f(script, std::ios::binary | std::ios::trunc);
    f << *r;
  }
  int rc = RunBash(script, trial.string(), out);
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(scratch, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().rfind("PWNED", 0) == 0)
      o.failure = "ran a command (" + it->path().string() + ")";
  }
  for (const auto& e : fs::directory_iterator(scratch)) {
    std::string name = e.path().filename().string();
    if (o.failure.empty() && name != "trial" && name != "victim") o.failure = "wrote outside the trial: " + name;
  }
  std::ifstream victim(scratch / "victim");
  std::string left((std::istreambuf_iterator<char>(victim)), std::istreambuf_iterator<char>());
  if (o.failure.empty() && left != "victim\n") o.failure = "changed or removed a file outside the trial";
  if (o.failure.empty() && (rc == 124 || rc == -1)) o.failure = "bash did not finish (rc " + std::to_string(rc) + ")";
  if (!o.failure.empty()) o.failure += "\n--- script ---\n" + Printable(*r, 600);
  return o;
}

inline std::vector<std::string> Expected(const Construct& c, const std::string& value) {
  if (!c.prints) return {};
  if (c.fixed) return {c.prefix};
  return {c.prefix + value + c.suffix};
}

inline std::string Script(const std::string& code) { return "#!/bin/bash\n" + code + "\n"; }

}  // namespace sweep::testing
