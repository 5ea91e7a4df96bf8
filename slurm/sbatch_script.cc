// Template rendering and the #SBATCH header; see sbatch_script.h for the syntax.
#include "slurm/sbatch_script.h"

#include "base/params.h"
#include "base/text.h"
#include "slurm/shell_context.h"

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
      return Status::InvalidArgument(
          fmt::format("{}:{}: '}}}}' without a matching '{{{{'", template_name, LineOf(tmpl, stray_close)));
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
      return Status::InvalidArgument(
          fmt::format("{}:{}: bad placeholder '{}' (expected {{{{name}}}} or {{{{raw:name}}}})", template_name,
                      LineOf(tmpl, open), tmpl.substr(open, close + 2 - open)));
    }
    p.name = std::string(inner);
    out.push_back(std::move(p));
    pos = close + 2;
  }
  return out;
}

// `value` written so that the shell reads it back literally at `site`, or why it cannot be.
Result<std::string> QuoteFor(const PlaceholderSite& site, const std::string& value) {
  std::string out;
  auto escape = [&](std::string_view specials) {
    for (char c : value) {
      if (specials.find(c) != std::string_view::npos) out.push_back('\\');
      out.push_back(c);
    }
    return out;
  };
  // In GBK, Big5 or Shift-JIS locales a byte >= 0x80 and the next one are one character, and '\\'
  // or '`' can be that second byte: the backslash put before it would be swallowed.
  bool backslashes = site.context == ShellContext::kDouble || site.context == ShellContext::kHeredoc;
  for (size_t i = 0; backslashes && i + 1 < value.size(); ++i) {
    if (static_cast<unsigned char>(value[i]) >= 0x80 && (value[i + 1] == '\\' || value[i + 1] == '`')) {
      return Status::InvalidArgument(
          "its value has a non-ASCII character right before a backslash or backquote, whose escape a GBK, Big5 or "
          "Shift-JIS locale would swallow; put the placeholder in '...' or in a word of its own");
    }
  }
  switch (site.context) {
    case ShellContext::kWord:
      return ShellQuote(value);
    case ShellContext::kComment:
      if (value.find_first_of("\n\r") != std::string::npos) {
        return Status::InvalidArgument("its value has a line break, which would end the comment and run the rest");
      }
      return ShellQuote(value);
    case ShellContext::kSingle:
      for (char c : value) {
        if (c == '\'') out += "'\\''";
        else out.push_back(c);
      }
      return out;
    case ShellContext::kDouble:
      return escape("\\$`\"");
    case ShellContext::kHeredoc:
    case ShellContext::kQuotedHeredoc:
      if (value.find('\n') != std::string::npos) {
        return Status::InvalidArgument("its value has a line break, which could end the here-document early");
      }
      return site.context == ShellContext::kHeredoc ? escape("\\$`") : value;
    case ShellContext::kRefused:
      break;
  }
  return Status::InvalidArgument(site.refusal);
}

bool IsDirectiveSafe(std::string_view v) {
  return std::all_of(v.begin(), v.end(), [](char c) {
    return IsNameChar(c) || c == '-' || c == '/' || c == ':' || c == '=' || c == '%' || c == ',' || c == '+' ||
           c == '@';
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

namespace {

std::vector<PlaceholderSite> Sites(std::string_view tmpl, const std::vector<Placeholder>& holders) {
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const auto& p : holders) ranges.emplace_back(p.begin, p.end);
  return AnalyzeShell(tmpl, ranges);
}

// The shell variable a message suggests assigning a placeholder's value to (lr -> LR).
std::string VariableFor(std::string_view name) {
  std::string var;
  for (char c : name) var.push_back(c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return var;
}

// Where "$VAR" keeps a value data, and where it does not: the shell expands it in a here-document
// body or a program's text too, and that program then reads the value as its own code.
std::string WhereVariableStands(const std::string& var) {
  return fmt::format(
      "\"${0}\" may stand as an argument (prog --x \"${0}\") or be read by the program from its environment "
      "(export {0}), never inside a here-document or a program's text (python3 <<EOF, bash -c '...', awk '...'), "
      "where the program would run the value",
      var);
}

std::string RefusalMessage(std::string_view tmpl, std::string_view template_name, const Placeholder& p,
                           const std::string& why) {
  std::string var = VariableFor(p.name);
  return fmt::format(
      "{}:{}: placeholder '{{{{{}}}}}' stands {}; only a word, '...', \"...\", a here-document line or a comment "
      "are accepted. Assign it once at the top, {}={{{{{}}}}}, then use \"${}\": {}",
      template_name, LineOf(tmpl, p.begin), p.name, why, var, p.name, var, WhereVariableStands(var));
}

std::string TextPlaceMessage(std::string_view tmpl, std::string_view template_name, const Placeholder& p,
                             const PlaceholderSite& site) {
  std::string var = VariableFor(p.name);
  return fmt::format(
      "{}:{}: placeholder '{{{{{}}}}}' is declared text (its values may hold characters outside the safe alphabet) "
      "and stands in {} that a program reads, which may run it as code; a text value may stand only as a "
      "variable's value or in a comment. Assign it once at the top, {}={{{{{}}}}}: {}",
      template_name, LineOf(tmpl, p.begin), p.name, ShellContextName(site.context), var, p.name,
      WhereVariableStands(var));
}

std::string OptionPlaceMessage(std::string_view tmpl, std::string_view template_name, const Placeholder& p,
                               const PlaceholderSite& site) {
  return fmt::format(
      "{}:{}: placeholder '{{{{{}}}}}' is declared an option (its values may begin with '-') and stands in {} "
      "where a program would read it as an option of its own; it may stand only after '--' in its command "
      "(prog -- {{{{{}}}}}) or as an option's own value (--flag={{{{{}}}}})",
      template_name, LineOf(tmpl, p.begin), p.name, ShellContextName(site.context), p.name, p.name);
}

std::string RawTextMessage(std::string_view tmpl, std::string_view template_name, const Placeholder& p) {
  return fmt::format(
      "{}:{}: placeholder '{{{{raw:{}}}}}' inserts its value verbatim, and '{}' is declared text (outside the safe "
      "alphabet): a text value cannot be raw. Assign it, {}={{{{{}}}}}, and use \"${}\"",
      template_name, LineOf(tmpl, p.begin), p.name, p.name, VariableFor(p.name), p.name, VariableFor(p.name));
}

// A value for a message: at most 60 bytes, control bytes as '?'.
std::string Shown(std::string_view v) {
  std::string out(v.substr(0, 60));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return v.size() > 60 ? out + "..." : out;
}

std::string ShapeMessage(std::string_view tmpl, std::string_view template_name, const Placeholder& p,
                         const std::string& value, const std::string& problem, bool option) {
  return fmt::format("{}:{}: placeholder '{{{{{}}}}}': its value '{}' {}, and '{}' is not declared {}", template_name,
                     LineOf(tmpl, p.begin), p.name, Shown(value), problem, p.name,
                     option ? "an option (option = true; then only after '--' or as --flag={{...}})"
                            : "a path (path = true; the value is then normalised)");
}

// Why the placeholder `p` at `site` is refused whatever its value, given what the study declared;
// "" when it is not.
std::string PlaceRefusal(std::string_view tmpl, std::string_view template_name, const Placeholder& p,
                         const PlaceholderSite& site, const DeclaredValues& declared) {
  if (p.raw) return declared.text.count(p.name) ? RawTextMessage(tmpl, template_name, p) : "";
  if (site.context == ShellContext::kRefused) return RefusalMessage(tmpl, template_name, p, site.refusal);
  if (declared.text.count(p.name) && !site.data_only) return TextPlaceMessage(tmpl, template_name, p, site);
  if (declared.option.count(p.name) && !site.option_value) return OptionPlaceMessage(tmpl, template_name, p, site);
  return "";
}

}  // namespace

Status CheckTemplateContexts(std::string_view tmpl, std::string_view template_name, const DeclaredValues& declared) {
  auto scanned = Scan(tmpl, template_name);
  if (!scanned.ok()) return scanned.status();
  std::vector<PlaceholderSite> sites = Sites(tmpl, *scanned);
  for (size_t k = 0; k < scanned->size(); ++k) {
    std::string why = PlaceRefusal(tmpl, template_name, (*scanned)[k], sites[k], declared);
    if (!why.empty()) return Status::InvalidArgument(why);
  }
  return Status::OK();
}

Result<std::string> RenderTemplate(std::string_view tmpl, std::string_view template_name,
                                   const std::map<std::string, std::string>& vars, const DeclaredValues& declared) {
  auto scanned = Scan(tmpl, template_name);
  if (!scanned.ok()) return scanned.status();
  std::vector<PlaceholderSite> sites = Sites(tmpl, *scanned);
  std::string out;
  out.reserve(tmpl.size() + 256);
  size_t pos = 0;
  size_t line_out = 0;  // where the current line of `out` begins
  for (size_t k = 0; k < scanned->size(); ++k) {
    const Placeholder& p = (*scanned)[k];
    std::string_view between = tmpl.substr(pos, p.begin - pos);
    if (size_t nl = between.rfind('\n'); nl != std::string_view::npos) line_out = out.size() + nl + 1;
    out.append(between);
    auto it = vars.find(p.name);
    if (it == vars.end()) {
      std::string known;
      std::vector<std::string_view> names;
      for (const auto& [k, v] : vars) {
        known += (known.empty() ? "" : ", ") + k;
        names.push_back(k);
      }
      return Status::InvalidArgument(fmt::format("{}:{}: unknown placeholder '{}'{} (known: {})", template_name,
                                                 LineOf(tmpl, p.begin), tmpl.substr(p.begin, p.end - p.begin),
                                                 DidYouMean(p.name, names), known));
    }
    if (it->second.find('\0') != std::string::npos) {
      return Status::InvalidArgument(fmt::format("{}:{}: value of '{}' contains a NUL byte, which no shell can carry",
                                                 template_name, LineOf(tmpl, p.begin), p.name));
    }
    if (std::string why = PlaceRefusal(tmpl, template_name, p, sites[k], declared); !why.empty()) {
      return Status::InvalidArgument(why);
    }
    if (p.raw) {
      out += it->second;
      if (size_t nl = it->second.rfind('\n'); nl != std::string::npos)
        line_out = out.size() - it->second.size() + nl + 1;
    } else {
      const PlaceholderSite& site = sites[k];
      if (!IsSafeValue(it->second)) {
        if (!declared.text.count(p.name)) {
          return Status::InvalidArgument(fmt::format(
              "{}:{}: placeholder '{{{{{}}}}}': its value has {}, outside the safe alphabet of template values ({}), "
              "and '{}' is not declared text",
              template_name, LineOf(tmpl, p.begin), p.name, FirstUnsafeChar(it->second), kSafeValueAlphabet, p.name));
        }
      }
      if (std::string problem =
              ValueShapeProblem(it->second, declared.option.count(p.name) > 0, declared.path.count(p.name) > 0);
          !problem.empty()) {
        bool as_option = !declared.option.count(p.name) && ReadsAsOption(it->second);
        return Status::InvalidArgument(ShapeMessage(tmpl, template_name, p, it->second, problem, as_option));
      }
      bool doc_line_start = out.find_first_not_of('\t', line_out) == std::string::npos;
      if (site.strip_tabs && doc_line_start && !it->second.empty() && it->second.front() == '\t') {
        return Status::InvalidArgument(fmt::format(
            "{}:{}: placeholder '{{{{{}}}}}' in a <<- here-document: its value starts with a tab, which <<- strips",
            template_name, LineOf(tmpl, p.begin), p.name));
      }
      auto quoted = QuoteFor(site, it->second);
      if (!quoted.ok()) {
        return Status::InvalidArgument(fmt::format("{}:{}: placeholder '{{{{{}}}}}' in {}: {}", template_name,
                                                   LineOf(tmpl, p.begin), p.name, ShellContextName(site.context),
                                                   quoted.status().message()));
      }
      out += *quoted;
    }
    pos = p.end;
    // A here-document line must not become its delimiter: render the rest of the line and compare.
    const PlaceholderSite& site = sites[k];
    bool doc = site.context == ShellContext::kHeredoc || site.context == ShellContext::kQuotedHeredoc;
    bool last_on_line = k + 1 == scanned->size() ||
                        tmpl.substr(pos, (*scanned)[k + 1].begin - pos).find('\n') != std::string_view::npos;
    if (doc && last_on_line) {
      size_t eol = tmpl.find('\n', pos);
      std::string line =
          out.substr(line_out) + std::string(tmpl.substr(pos, eol == std::string_view::npos ? eol : eol - pos));
      std::string_view body = line;
      if (site.strip_tabs) body.remove_prefix(std::min(body.find_first_not_of('\t'), body.size()));
      if (body == site.delimiter) {
        return Status::InvalidArgument(fmt::format(
            "{}:{}: placeholder '{{{{{}}}}}' in a here-document: with its value '{}' the line reads as the delimiter "
            "and would end the here-document early",
            template_name, LineOf(tmpl, p.begin), p.name, it->second));
      }
    }
  }
  out.append(tmpl.substr(pos));
  return out;
}

Status CheckOwnDirectives(std::string_view tmpl, std::string_view template_name) {
  static constexpr std::string_view kOwned[] = {"output", "open-mode", "job-name", "comment", "array", "chdir"};
  static constexpr std::string_view kOwnedShort = "oJaD";
  for (const std::string& d : SbatchDirectives(tmpl)) {
    // sbatch reads every word of the line as an option (a line may hold several).
    std::string_view owned;
    std::string_view rest = std::string_view(d).substr(7);
    while (owned.empty() && !rest.empty()) {
      rest.remove_prefix(std::min(rest.find_first_not_of(" \t'\""), rest.size()));
      std::string_view word = rest.substr(0, rest.find_first_of(" \t"));
      rest.remove_prefix(word.size());
      if (word.substr(0, 2) == "--") {
        std::string_view name =
            word.substr(2, word.find('=') == std::string_view::npos ? word.npos : word.find('=') - 2);
        // sbatch takes any unambiguous prefix of a long option.
        for (std::string_view o : kOwned) {
          if (name.size() >= 3 && o.substr(0, name.size()) == name) owned = o;
        }
      } else if (word.size() >= 2 && word[0] == '-' && kOwnedShort.find(word[1]) != std::string_view::npos) {
        owned = word.substr(0, 2);
      }
    }
    if (owned.empty()) continue;
    size_t at = tmpl.find(d);
    return Status::InvalidArgument(fmt::format(
        "{}:{}: '{}' sets {}, which slurmsweep sets itself (it tracks each trial by its job name, comment and "
        "log, and starts the log afresh on each run); remove the line",
        template_name, LineOf(tmpl, at == std::string_view::npos ? 0 : at), d, owned));
  }
  return Status::OK();
}

size_t DirectivesEnd(std::string_view script) {
  size_t pos = 0;
  while (pos < script.size()) {
    size_t nl = script.find('\n', pos);
    std::string_view line = script.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    size_t b = line.find_first_not_of(" \t\r");
    // Blank lines and comments (the shebang too) do not end the directives; the first command does.
    if (b != std::string_view::npos && line[b] != '#') return pos;
    pos = nl == std::string_view::npos ? script.size() : nl + 1;
  }
  return pos;
}

std::vector<std::string> SbatchDirectives(std::string_view script) {
  std::vector<std::string> out;
  std::string_view head = script.substr(0, DirectivesEnd(script));
  while (!head.empty()) {
    size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    size_t b = line.find_first_not_of(" \t\r");
    if (b != std::string_view::npos && line.substr(b, 7) == "#SBATCH") out.emplace_back(line.substr(b));
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
  // A site's JobFileAppend=1 would keep a requeued run's lines after the previous run's, and the
  // two could not be told apart in the log: each run starts its log afresh.
  if (!h.output.empty()) SWEEP_RETURN_IF_ERROR(add("open-mode", "truncate"));
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
