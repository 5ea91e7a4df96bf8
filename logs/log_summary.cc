// SummarizeLog: the run loop's parser fed one line at a time (one ParserState, as for a trial's
// log read in chunks), so a malformed count maps to its line.
#include "logs/log_summary.h"

#include <algorithm>
#include <map>

namespace sweep::logs {

LogSummary SummarizeLog(std::string_view text, const LogFormat& format) {
  LogSummary out;
  ParserState state;
  std::map<std::string, LogSummary::Metric> by_name;
  auto add = [&](const MetricPoint& p) {
    auto [it, fresh] = by_name.try_emplace(p.name);
    LogSummary::Metric& m = it->second;
    if (fresh) m.name = p.name, m.first_step = p.step, m.last_step = p.step;
    ++m.count;
    m.first_step = std::min(m.first_step, p.step);
    m.last_step = std::max(m.last_step, p.step);
    ++out.points;
    out.first_step = std::min(out.first_step.value_or(p.step), p.step);
    out.last_step = std::max(out.last_step.value_or(p.step), p.step);
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      out.partial_last_line = true;
      break;
    }
    std::string_view line = text.substr(pos, nl + 1 - pos);
    pos = nl + 1;
    ++out.lines;
    ParseOutput parsed = ParseMetrics(line, format, state);
    if (parsed.malformed > 0) out.malformed_lines.push_back(out.lines);
    for (const MetricPoint& p : parsed.points) add(p);
    if (parsed.train_iters) add(*parsed.train_iters);
    if (!parsed.time_key.empty()) out.time_key = std::string(parsed.time_key);
  }
  out.last_time_s = state.time_s;
  out.detected = format.format == MetricFormat::kAuto ? state.detected : format.format;
  for (auto& [name, m] : by_name) out.metrics.push_back(std::move(m));
  return out;
}

std::optional<FormatGuess> GuessLogFormat(std::string_view text) {
  LogSummary s = SummarizeLog(text, MetricFormat::kAuto);
  if (s.detected == MetricFormat::kAuto || s.points == 0) return std::nullopt;
  FormatGuess g;
  g.format = s.detected;
  g.points = s.points;
  for (const auto& m : s.metrics) g.names.push_back(m.name);
  return g;
}

}  // namespace sweep::logs
