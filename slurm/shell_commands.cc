// What bash does with a simple command's words, as the template reader needs it; see
// shell_commands.h.
#include "slurm/shell_commands.h"

#include <algorithm>
#include <regex>

namespace sweep::slurm {
namespace {

bool OneOf(std::string_view w, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), w) != set.end();
}

}  // namespace

std::string StripQuotes(std::string_view w) {
  std::string out;
  for (char c : w) {
    if (c != '\'' && c != '"' && c != '\\') out.push_back(c);
  }
  return out;
}

std::string Basename(std::string_view w) {
  std::string s = StripQuotes(w);
  size_t slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

bool IsAssignment(std::string_view w) {
  static const std::regex re(R"(^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=)");
  return std::regex_search(w.begin(), w.end(), re);
}

bool IsReserved(std::string_view w) {
  return OneOf(w, {"!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "time", "-p"});
}

// Commands that run the command named by their next non-option word.
bool IsWrapper(std::string_view w) {
  return OneOf(w, {"exec", "command", "builtin", "nohup", "env", "nice", "setsid", "stdbuf", "time"});
}

namespace {

// The index of the command's name in `w`, past assignments, reserved words and wrappers such as
// exec (w.size() when the words so far name none); `wrapped`: a wrapper stood before it.
size_t CommandIndex(const std::vector<std::string>& w, bool* wrapped_out) {
  size_t k = 0;
  bool wrapped = false;
  while (k < w.size()) {
    std::string s = StripQuotes(w[k]);
    if (!wrapped && IsAssignment(w[k])) {
      ++k;
    } else if (IsReserved(s) || IsWrapper(Basename(w[k]))) {
      wrapped = wrapped || IsWrapper(Basename(w[k]));
      ++k;
    } else if (wrapped && (s.rfind('-', 0) == 0 || IsAssignment(w[k]))) {
      ++k;
    } else {
      break;
    }
  }
  *wrapped_out = wrapped;
  return k;
}

}  // namespace

bool OptionsEnded(const std::vector<std::string>& words) {
  bool wrapped = false;
  size_t k = CommandIndex(words, &wrapped);
  for (size_t j = k + 1; j < words.size(); ++j) {
    if (StripQuotes(words[j]) == "--") return true;
  }
  return false;
}

std::string CommandRefusal(const std::vector<std::string>& words, std::string_view prefix, bool word_ends_here) {
  const auto& w = words;
  bool wrapped = false;
  size_t k = CommandIndex(w, &wrapped);
  if (k == w.size()) {
    if (!wrapped && IsAssignment(prefix)) return "";
    if (StripQuotes(prefix).empty() && word_ends_here)
      return "as the command's name, so the value would choose what runs";
    return "";
  }
  std::string cmd = Basename(w[k]);
  if (OneOf(cmd, {"eval", "trap", "let", "alias", "source", ".", "unset", "read", "mapfile", "readarray", "getopts"})) {
    return "in the arguments of '" + cmd + "', which runs or names code with them";
  }
  if (OneOf(cmd, {"declare", "typeset", "local", "export", "readonly"}) && prefix.find('=') == std::string_view::npos) {
    return "as a variable name given to '" + cmd + "'";
  }
  bool shell = false, script = false;
  for (size_t j = k; j < w.size(); ++j) {
    std::string b = Basename(w[j]);
    std::string s = StripQuotes(w[j]);
    if (OneOf(b, {"ssh", "xargs", "watch", "su", "sudo", "parallel", "awk", "gawk", "mawk", "nawk", "sed"})) {
      return "in the arguments of '" + b + "', which runs them as code";
    }
    if (b == "printf" && j == k && std::find(w.begin() + k, w.end(), "-v") != w.end()) {
      return "in a 'printf -v' command (the variable name is evaluated)";
    }
    if (OneOf(s, {"-exec", "-execdir", "-ok", "-okdir"})) return "after find's " + s + ", which runs its arguments";
    if (OneOf(b, {"sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish"})) shell = true;
    if (b.rfind("python", 0) == 0 || OneOf(b, {"perl", "ruby", "node", "php", "lua", "Rscript", "julia"}))
      script = true;
    bool option = s.size() > 1 && s[0] == '-' && s[1] != '-';
    if (shell && option && s.find('c') != std::string::npos) return "in the code of '" + b + " " + s + "'";
    if (script && option &&
        (s.find('c') != std::string::npos || s.find('e') != std::string::npos || s.find('E') != std::string::npos)) {
      return "in the code of '" + b + " " + s + "'";
    }
    if ((shell || script) && (s == "--command" || s == "--eval")) return "in the code of '" + b + " " + s + "'";
  }
  return "";
}

}  // namespace sweep::slurm
