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
  std::string out;
  out.reserve(tmpl.size() + 256);
  size_t pos = 0;
  for (const auto& p : *scanned) {
    out.append(tmpl.substr(pos, p.begin - pos));
    auto it = vars.find(p.name);
    if (it == vars.end()) {
      std::string known;
      for (const auto& [k, v] : vars) known += (known.empty() ? "" : ", ") + k;
      return Status::InvalidArgument(fmt::format("{}:{}: unknown placeholder '{{{{{}}}}}' (known: {})", template_name,
                                                 LineOf(tmpl, p.begin), p.name, known));
    }
    if (it->second.find('\0') != std::string::npos) {
      return Status::InvalidArgument(
          fmt::format("{}:{}: value of '{}' contains a NUL byte, which no shell can carry", template_name,
                      LineOf(tmpl, p.begin), p.name));
    }
    out += p.raw ? it->second : ShellQuote(it->second);
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
