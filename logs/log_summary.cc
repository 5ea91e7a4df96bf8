// SummarizeLog: the run loop's parser fed one line at a time (one ParserState, as for a trial's
// log read in chunks), so a malformed count maps to its line.
#include "logs/log_summary.h"

#include <algorithm>
#include <map>

namespace sweep::logs {

void LogSummarizer::Add(const MetricPoint& p) {
  auto [it, fresh] = by_name_.try_emplace(p.name);
  LogSummary::Metric& m = it->second;
  if (fresh) m.name = p.name, m.first_step = p.step, m.last_step = p.step;
  ++m.count;
  m.first_step = std::min(m.first_step, p.step);
  m.last_step = std::max(m.last_step, p.step);
  ++out_.points;
  out_.first_step = std::min(out_.first_step.value_or(p.step), p.step);
  out_.last_step = std::max(out_.last_step.value_or(p.step), p.step);
}

void LogSummarizer::Line(std::string_view line) {
  ++out_.lines;
  ParseOutput parsed = ParseMetrics(line, format_, state_);
  if (parsed.malformed > 0) out_.malformed_lines.push_back(out_.lines);
  for (const MetricPoint& p : parsed.points) Add(p);
  if (parsed.train_iters) Add(*parsed.train_iters);
  if (!parsed.time_key.empty()) out_.time_key = std::string(parsed.time_key);
}

void LogSummarizer::Feed(std::string_view chunk) {
  size_t pos = 0;
  while (pos < chunk.size()) {
    size_t nl = chunk.find('\n', pos);
    std::string_view piece = chunk.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl + 1 - pos);
    pos += piece.size();
    if (overlong_) {
      if (nl == std::string_view::npos) continue;  // still inside the long line
      // Its end: one line, malformed, as ParseMetrics counts a line over kMaxLineBytes.
      overlong_ = false;
      ++out_.lines;
      out_.malformed_lines.push_back(out_.lines);
      continue;
    }
    if (nl != std::string_view::npos && pending_.empty()) {
      Line(piece);  // the common case: a whole line inside the chunk, not copied
      continue;
    }
    if (pending_.size() + piece.size() > kMaxLineBytes) {
      pending_.clear();
      pending_.shrink_to_fit();
      if (nl == std::string_view::npos) {
        overlong_ = true;
      } else {
        ++out_.lines;
        out_.malformed_lines.push_back(out_.lines);
      }
      continue;
    }
    pending_.append(piece);
    if (nl != std::string_view::npos) {
      Line(pending_);
      pending_.clear();
    }
  }
}

LogSummary LogSummarizer::Finish() {
  out_.partial_last_line = overlong_ || !pending_.empty();
  out_.last_time_s = state_.time_s;
  out_.detected = format_.format == MetricFormat::kAuto ? state_.detected : format_.format;
  for (auto& [name, m] : by_name_) out_.metrics.push_back(std::move(m));
  by_name_.clear();
  return std::move(out_);
}

LogSummary SummarizeLog(std::string_view text, const LogFormat& format) {
  LogSummarizer summarizer(format);
  summarizer.Feed(text);
  return summarizer.Finish();
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
