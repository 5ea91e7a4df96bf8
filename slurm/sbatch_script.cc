// Template rendering and the #SBATCH header; see sbatch_script.h for the syntax.
#include "slurm/sbatch_script.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace sweep::slurm {
namespace {

constexpr std::string_view kRawPrefix = "raw:";

struct Placeholder {
  size_t begin = 0, end = 0;  // byte range of "{{...}}"
  std::string name;
  bool raw = false;
};

int LineOf(std::string_view text, size_t pos) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

Result<std::vector<Placeholder>> Scan(std::string_view tmpl, std::string_view template_name) {
  std::vector<Placeholder> out;
  size_t pos = 0;
  while (true) {
    size_t open = tmpl.find("{{", pos);
    size_t stray_close = tmpl.find("}}", pos);
    if (stray_close != std::string_view::npos && (open == std::string_view::npos || stray_close < open)) {
      return Status::InvalidArgument(fmt::format("{}:{}: '}}}}' without a matching '{{{{'", template_name,
                                                 LineOf(tmpl, stray_close)));
    }
    if (open == std::string_view::npos) break;
    size_t close = tmpl.find("}}", open + 2);
    size_t newline = tmpl.find('\n', open);
    if (close == std::string_view::npos || (newline != std::string_view::npos && newline < close)) {
      return Status::InvalidArgument(
          fmt::format("{}:{}: '{{{{' is not closed by '}}}}' on the same line", template_name, LineOf(tmpl, open)));
    }
    std::string_view inner = tmpl.substr(open + 2, close - open - 2);
    while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
    while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
    Placeholder p{open, close + 2, "", false};
    if (inner.substr(0, kRawPrefix.size()) == kRawPrefix) {
      p.raw = true;
      inner.remove_prefix(kRawPrefix.size());
    }
    if (inner.empty() || !std::all_of(inner.begin(), inner.end(), IsNameChar)) {
      return Status::InvalidArgument(fmt::format("{}:{}: bad placeholder '{}' (expected {{{{name}}}} or {{{{raw:name}}}})",
                                                 template_name, LineOf(tmpl, open), tmpl.substr(open, close + 2 - open)));
    }
    p.name = std::string(inner);
    out.push_back(std::move(p));
    pos = close + 2;
  }
  return out;
}

// Where a placeholder stands, as the shell will read the rendered script.
enum class Context {
  kWord,           // unquoted: the value becomes one single-quoted word
  kSingle,         // inside '...': single quotes in the value are closed, escaped and reopened
  kDouble,         // inside "...": \ $ ` " are backslash-escaped
  kHeredoc,        // in an unquoted here-document body: \ $ ` are backslash-escaped
  kQuotedHeredoc,  // in a here-document whose delimiter is quoted: nothing is expanded
  kComment,        // after #: not run by the shell (#SBATCH lines: sbatch reads the quoted word)
  kAnsi,           // inside $'...': refused, its escapes would change the value
};

// The shell context of each placeholder in `tmpl`, in order. A small reader of POSIX shell
// quoting: quotes, backslashes, comments, $( ) nesting (inside double quotes too) and
// here-documents (<< and <<-, quoted or not). Backquote substitution is not followed.
std::vector<Context> Contexts(std::string_view tmpl, const std::vector<Placeholder>& holders) {
  enum Mode { kNone, kSq, kDq, kAnsiQ };
  struct Frame {
    Mode mode;
    int parens;  // kNone frames opened by $(: ( ) depth inside
  };
  struct Pending {
    std::string delimiter;
    bool quoted, strip_tabs;
  };
  std::vector<Frame> stack = {{kNone, 0}};
  std::vector<Pending> heredocs;
  std::vector<Context> out;
  size_t next = 0;  // next placeholder
  auto at_word_start = [&](size_t i) {
    if (i == 0) return true;
    char p = tmpl[i - 1];
    return p == ' ' || p == '\t' || p == '\n' || p == ';' || p == '&' || p == '|' || p == '(' || p == ')';
  };
  size_t i = 0;
  while (i < tmpl.size()) {
    if (next < holders.size() && i == holders[next].begin) {
      Mode m = stack.back().mode;
      out.push_back(m == kSq ? Context::kSingle : m == kDq ? Context::kDouble : m == kAnsiQ ? Context::kAnsi : Context::kWord);
      i = holders[next++].end;
      continue;
    }
    char c = tmpl[i];
    Frame& f = stack.back();
    if (f.mode == kSq) {
      if (c == '\'') stack.pop_back();
      ++i;
      continue;
    }
    if (f.mode == kAnsiQ) {
      if (c == '\\') ++i;
      else if (c == '\'') stack.pop_back();
      ++i;
      continue;
    }
    if (c == '\\') {
      i += 2;
      continue;
    }
    if (f.mode == kDq) {
      if (c == '"') stack.pop_back();
      else if (c == '$' && i + 1 < tmpl.size() && tmpl[i + 1] == '(') stack.push_back({kNone, 0}), ++i;
      ++i;
      continue;
    }
    // Unquoted.
    if (c == '\'') {
      stack.push_back({kSq, 0});
    } else if (c == '"') {
      stack.push_back({kDq, 0});
    } else if (c == '$' && i + 1 < tmpl.size() && tmpl[i + 1] == '\'') {
      stack.push_back({kAnsiQ, 0});
      ++i;
    } else if (c == '$' && i + 1 < tmpl.size() && tmpl[i + 1] == '(') {
      stack.push_back({kNone, 0});
      ++i;
    } else if (c == '(') {
      ++f.parens;
    } else if (c == ')') {
      if (f.parens > 0) --f.parens;
      else if (stack.size() > 1) stack.pop_back();
    } else if (c == '#' && at_word_start(i)) {
      size_t end = tmpl.find('\n', i);
      if (end == std::string_view::npos) end = tmpl.size();
      for (; next < holders.size() && holders[next].begin < end; ++next) out.push_back(Context::kComment);
      i = end;
      continue;
    } else if (c == '<' && tmpl.substr(i, 2) == "<<" && tmpl.substr(i, 3) != "<<<") {
      size_t j = i + 2;
      bool strip = j < tmpl.size() && tmpl[j] == '-';
      if (strip) ++j;
      while (j < tmpl.size() && (tmpl[j] == ' ' || tmpl[j] == '\t')) ++j;
      std::string word;
      bool quoted = false;
      while (j < tmpl.size() && std::string_view(" \t\n;&|<>()").find(tmpl[j]) == std::string_view::npos) {
        char d = tmpl[j];
        if (d == '\'' || d == '"') {
          quoted = true;
          size_t close = tmpl.find(d, j + 1);
          if (close == std::string_view::npos || tmpl.substr(j, close - j).find('\n') != std::string_view::npos) break;
          word.append(tmpl.substr(j + 1, close - j - 1));
          j = close + 1;
        } else if (d == '\\' && j + 1 < tmpl.size()) {
          quoted = true;
          word.push_back(tmpl[j + 1]);
          j += 2;
        } else {
          word.push_back(d);
          ++j;
        }
      }
      if (!word.empty()) heredocs.push_back({word, quoted, strip});
      i = j;
      continue;
    } else if (c == '\n' && !heredocs.empty()) {
      // Here-document bodies start on the next line, one after the other.
      ++i;
      for (const Pending& h : heredocs) {
        while (i < tmpl.size()) {
          size_t end = tmpl.find('\n', i);
          if (end == std::string_view::npos) end = tmpl.size();
          std::string_view line = tmpl.substr(i, end - i);
          if (h.strip_tabs) line.remove_prefix(std::min(line.find_first_not_of('\t'), line.size()));
          bool last = line == h.delimiter;
          for (; next < holders.size() && holders[next].begin < end; ++next) {
            out.push_back(h.quoted ? Context::kQuotedHeredoc : Context::kHeredoc);
          }
          i = std::min(end + 1, tmpl.size());
          if (last) break;
        }
      }
      heredocs.clear();
      continue;
    }
    ++i;
  }
  while (out.size() < holders.size()) out.push_back(Context::kWord);
  return out;
}

// `value` written so that the shell reads it back literally in `context`.
Result<std::string> QuoteFor(Context context, const std::string& value) {
  std::string out;
  auto escape = [&](std::string_view specials) {
    for (char c : value) {
      if (specials.find(c) != std::string_view::npos) out.push_back('\\');
      out.push_back(c);
    }
    return out;
  };
  switch (context) {
    case Context::kWord:
    case Context::kComment:
      return ShellQuote(value);
    case Context::kSingle:
      for (char c : value) {
        if (c == '\'') out += "'\\''";
        else out.push_back(c);
      }
      return out;
    case Context::kDouble:
      return escape("\\$`\"");
    case Context::kHeredoc:
    case Context::kQuotedHeredoc:
      if (value.find('\n') != std::string::npos) {
        return Status::InvalidArgument("its value has a line break, which could end the here-document early");
      }
      return context == Context::kHeredoc ? escape("\\$`") : value;
    case Context::kAnsi:
      return Status::InvalidArgument("it stands inside $'...', whose escapes would change the value; put it outside");
  }
  return value;
}

bool IsDirectiveSafe(std::string_view v) {
  return std::all_of(v.begin(), v.end(), [](char c) {
    return IsNameChar(c) || c == '-' || c == '/' || c == ':' || c == '=' || c == '%' || c == ',' || c == '+' || c == '@';
  });
}

}  // namespace

std::string ShellQuote(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 2);
  out.push_back('\'');
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

Result<std::vector<std::string>> TemplatePlaceholders(std::string_view tmpl, std::string_view template_name) {
  auto scanned = Scan(tmpl, template_name);
  if (!scanned.ok()) return scanned.status();
  std::vector<std::string> names;
  for (const auto& p : *scanned) {
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  }
  return names;
}

Result<std::string> RenderTemplate(std::string_view tmpl, std::string_view template_name,
                                   const std::map<std::string, std::string>& vars) {
  auto scanned = Scan(tmpl, template_name);
  if (!scanned.ok()) return scanned.status();
  std::vector<Context> contexts = Contexts(tmpl, *scanned);
  std::string out;
  out.reserve(tmpl.size() + 256);
  size_t pos = 0;
  for (size_t k = 0; k < scanned->size(); ++k) {
    const Placeholder& p = (*scanned)[k];
    out.append(tmpl.substr(pos, p.begin - pos));
    auto it = vars.find(p.name);
    if (it == vars.end()) {
      std::string known;
      for (const auto& [k, v] : vars) known += (known.empty() ? "" : ", ") + k;
      return Status::InvalidArgument(fmt::format("{}:{}: unknown placeholder '{}' (known: {})", template_name,
                                                 LineOf(tmpl, p.begin), tmpl.substr(p.begin, p.end - p.begin), known));
    }
    if (it->second.find('\0') != std::string::npos) {
      return Status::InvalidArgument(
          fmt::format("{}:{}: value of '{}' contains a NUL byte, which no shell can carry", template_name,
                      LineOf(tmpl, p.begin), p.name));
    }
    if (p.raw) {
      out += it->second;
    } else {
      auto quoted = QuoteFor(contexts[k], it->second);
      if (!quoted.ok()) {
        return Status::InvalidArgument(fmt::format("{}:{}: placeholder '{{{{{}}}}}': {}", template_name,
                                                   LineOf(tmpl, p.begin), p.name, quoted.status().message()));
      }
      out += *quoted;
    }
    pos = p.end;
  }
  out.append(tmpl.substr(pos));
  return out;
}

std::vector<std::string> SbatchDirectives(std::string_view script) {
  std::vector<std::string> out;
  bool first = true;
  while (!script.empty()) {
    size_t nl = script.find('\n');
    std::string_view line = script.substr(0, nl);
    script.remove_prefix(nl == std::string_view::npos ? script.size() : nl + 1);
    if (std::exchange(first, false) && line.substr(0, 2) == "#!") continue;
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) continue;  // blank lines do not end the directives
    if (line[b] != '#') break;                   // the first command does
    if (line.substr(b, 7) == "#SBATCH") out.emplace_back(line.substr(b));
  }
  return out;
}

Result<std::string> AddSbatchHeader(std::string_view script, const SbatchHeader& h) {
  std::string header;
  auto add = [&](std::string_view option, const std::string& value) -> Status {
    if (value.empty()) return Status::OK();
    if (!IsDirectiveSafe(value)) {
      return Status::InvalidArgument(
          fmt::format("#SBATCH --{} value '{}' may only use letters, digits and _ . - / : = % , + @", option, value));
    }
    header += fmt::format("#SBATCH --{}={}\n", option, value);
    return Status::OK();
  };
  SWEEP_RETURN_IF_ERROR(add("job-name", h.job_name));
  SWEEP_RETURN_IF_ERROR(add("output", h.output));
  SWEEP_RETURN_IF_ERROR(add("comment", h.comment));
  SWEEP_RETURN_IF_ERROR(add("chdir", h.workdir));
  SWEEP_RETURN_IF_ERROR(add("partition", h.partition));
  SWEEP_RETURN_IF_ERROR(add("account", h.account));
  SWEEP_RETURN_IF_ERROR(add("qos", h.qos));
  SWEEP_RETURN_IF_ERROR(add("nodes", std::to_string(h.nodes)));
  if (h.gpus_per_node > 0) SWEEP_RETURN_IF_ERROR(add("gpus-per-node", std::to_string(h.gpus_per_node)));
  if (h.cpus_per_task > 0) SWEEP_RETURN_IF_ERROR(add("cpus-per-task", std::to_string(h.cpus_per_task)));
  SWEEP_RETURN_IF_ERROR(add("mem", h.mem));
  SWEEP_RETURN_IF_ERROR(add("time", h.time_limit));
  SWEEP_RETURN_IF_ERROR(add("array", h.array));

  std::string out;
  if (script.substr(0, 2) == "#!") {
    size_t nl = script.find('\n');
    std::string_view first = nl == std::string_view::npos ? script : script.substr(0, nl + 1);
    out.append(first);
    if (nl == std::string_view::npos) out.push_back('\n');
    out += header;
    if (nl != std::string_view::npos) out.append(script.substr(nl + 1));
  } else {
    out = "#!/bin/bash\n" + header;
    out.append(script);
  }
  return out;
}

}  // namespace sweep::slurm
