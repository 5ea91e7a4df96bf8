// Logs that have lines and yield no point; see log_format_check.h.
#include "run/log_format_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/terminal.h"

namespace sweep::run {

void LogFormatCheck::Saw(int64_t trial, std::string_view trial_key, std::string_view lines, size_t line_count,
                         size_t points) {
  Seen& s = trials_[trial];
  s.key = std::string(trial_key);
  s.lines += static_cast<int64_t>(line_count);
  if (points > 0) s.yielded = true;
  if (s.yielded) {
    s.sample.clear();
    s.sample.shrink_to_fit();
    s.guess.reset();
    return;
  }
  if (s.sample.size() >= kSampleBytes || lines.empty()) return;
  // Whole lines only, so the detector never sees half of one.
  std::string_view add = lines.substr(0, kSampleBytes - s.sample.size());
  if (add.size() < lines.size()) add = add.substr(0, add.rfind('\n') + 1);
  if (add.empty()) return;
  s.sample.append(add);
  // Only another format can be named: "auto" ran the detector on these lines itself.
  if (configured_ == MetricFormat::kAuto) return;
  s.guess = logs::GuessLogFormat(s.sample);
  if (s.guess && s.guess->format == configured_) s.guess.reset();
}

void LogFormatCheck::Yielded(int64_t trial) { trials_[trial].yielded = true; }

void LogFormatCheck::Ended(int64_t trial, std::string_view state) {
  auto it = trials_.find(trial);
  if (it != trials_.end() && (state == "completed" || state == "timeout")) it->second.ended_quiet = true;
}

std::optional<LogFormatCheck::Verdict> LogFormatCheck::Check() const {
  for (const auto& [id, s] : trials_) {
    if (s.yielded || s.lines == 0) continue;
    if (!s.guess && !s.ended_quiet) continue;
    Verdict v;
    v.trial_key = s.key;
    v.lines = s.lines;
    v.guess = s.guess;
    // Up to three non-empty lines from the start, each cut to a readable length.
    size_t pos = 0;
    for (int shown = 0; shown < 3 && pos < s.sample.size();) {
      size_t nl = s.sample.find('\n', pos);
      if (nl == std::string::npos) nl = s.sample.size();
      std::string_view line = std::string_view(s.sample).substr(pos, nl - pos);
      pos = nl + 1;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      v.head += "\n    " + TerminalSafe(line.substr(0, 160));
      ++shown;
    }
    return v;
  }
  return std::nullopt;
}

std::string LogFormatCheck::Describe(const Verdict& v) const {
  std::string read_as = fmt::format("metric_format = \"{}\"", MetricFormatName(configured_));
  std::string out =
      fmt::format("trial {}'s log has {} line(s) and yielded no metric point with {}", v.trial_key, v.lines, read_as);
  if (v.guess) {
    std::string names;
    for (size_t i = 0; i < v.guess->names.size() && i < 6; ++i) names += (i ? ", " : "") + v.guess->names[i];
    if (v.guess->names.size() > 6) names += ", ...";
    out += fmt::format("; its lines parse as \"{}\" ({} point(s) of its first lines: {})",
                       MetricFormatName(v.guess->format), v.guess->points, names);
  } else {
    out += "; no known format recognizes its lines";
  }
  return out;
}

}  // namespace sweep::run
