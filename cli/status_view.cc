// The status views of a study and the live terminal display; see status_view.h.
#include "cli/status_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "base/final_objective.h"
#include "base/terminal.h"
#include "base/trial_state.h"
#include "results/configurations.h"
#include "results/report_data.h"
#include "results/study_trials.h"

namespace sweep::cli {

std::optional<double> TrialObjective(const reports::TrialRow& row) { return row.objective_value; }

std::string RenderStatusTable(const std::vector<reports::TrialRow>& rows, const std::vector<std::string>& param_names,
                              const std::string& objective, bool minimize, bool all) {
  std::vector<size_t> shown(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) shown[i] = i;
  const bool top = !all && rows.size() > kStatusAllRows;
  if (top) {
    // The best final values first, then the trials without one, each in id order.
    std::stable_sort(shown.begin(), shown.end(), [&](size_t a, size_t b) {
      std::optional<double> va = TrialObjective(rows[a]), vb = TrialObjective(rows[b]);
      if (va.has_value() != vb.has_value()) return va.has_value();
      return va && Better(*va, *vb, minimize);
    });
    shown.resize(kStatusTopRows);
  }
  std::string out;
  // The objective's column is as wide as its name (up to 24), so the header names it whole.
  size_t ow = std::clamp<size_t>(objective.size(), 11, 24);
  std::string header = objective.size() <= ow ? objective : objective.substr(0, ow - 1) + "~";
  if (top) {
    out += fmt::format("the {} best of {} trials by final {} (status --all lists every trial):\n", shown.size(),
                       rows.size(), TerminalSafe(objective));
  }
  out += fmt::format("{:<16} {:<13} {:>8} {:>7} {:>{}} {:>8}  {}\n", "trial", "state", "job", "steps",
                     TerminalSafe(header), ow, "iter/s", "parameters / reason");
  for (size_t i : shown) {
    const reports::TrialRow& r = rows[i];
    std::optional<double> value = TrialObjective(r);
    std::string params;
    for (size_t k = 0; k < param_names.size() && k < r.param_values.size(); ++k) {
      params += fmt::format("{}{}={}", k ? " " : "", param_names[k], TerminalSafe(r.param_values[k].text));
    }
    out += fmt::format("{:<16} {:<13} {:>8} {:>7} {:>{}} {:>8}  {}{}\n", r.trial_key, r.state,
                       r.job_id.empty() ? "-" : r.job_id, r.steps, value ? fmt::format("{:.5g}", *value) : "-", ow,
                       r.iters_per_s ? fmt::format("{:.3g}", *r.iters_per_s) : "-", params,
                       r.reason.empty() ? "" : "  [" + TerminalSafe(r.reason) + "]");
  }
  if (top) {
    out += fmt::format("... {} more trials not listed (status --all lists them, status --json has every trial)\n",
                       rows.size() - shown.size());
  }
  // Every trial counted by state, listed or not.
  std::map<std::string, int> by_state;
  for (const auto& r : rows) ++by_state[r.state];
  std::string counts;
  for (const auto& [state, n] : by_state) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, state);
  out += fmt::format("{} trials: {}\n", rows.size(), counts);
  return out;
}

Result<StudyView> ReadStudyView(store::Store& store, const study::Study& study, int64_t study_id, double now) {
  int left_out = 0;
  auto trials = results::StudyTrials(store, study, study_id, &left_out);
  if (!trials.ok()) return trials.status();
  return ReadStudyView(store, study, study_id, now, *trials, results::ParamNames(study), left_out);
}

Result<StudyView> ReadStudyView(store::Store& store, const study::Study& study, int64_t study_id, double now,
                                const std::vector<store::TrialRecord>& trials,
                                const std::vector<std::string>& param_names, int left_out) {
  StudyView view;
  view.left_out = left_out;
  auto rows = results::TrialRowsOf(store, study, study_id, trials, param_names, now, study.objective.metric);
  if (!rows.ok()) return rows.status();
  view.rows = std::move(*rows);
  std::map<int64_t, const store::TrialRecord*> by_id;
  for (const auto& t : trials) by_id[t.id] = &t;
  for (const auto& r : view.rows) {
    ProgressTrial p;
    p.key = r.trial_key;
    p.state = r.state;
    p.steps = r.steps;
    p.iters_per_s = r.iters_per_s;
    p.run_s = r.wall_time_s;
    p.objective = TrialObjective(r);
    std::string log_path;
    nlohmann::json params = nlohmann::json::object();
    if (auto it = by_id.find(r.trial_id); it != by_id.end()) {
      p.started_at = it->second->started_at;
      p.ended_at = it->second->ended_at;
      log_path = it->second->log_path;
      params = nlohmann::json::parse(it->second->params_json, nullptr, /*allow_exceptions=*/false);
      if (params.is_discarded()) params = nlohmann::json::object();
    }
    // Only the trials still running need their total for the ETA: one small query each.
    // From the metric's summary row (its last point), not its series: thousands may run at once.
    if (!IsFinalTrialState(r.state) && r.steps > 0) {
      auto total = store.LastMetric(r.trial_id, "train_iters");
      if (!total.ok()) return total.status();
      if (*total) p.total_steps = static_cast<int64_t>((*total)->value);
    }
    view.progress.push_back(std::move(p));
    view.log_paths.push_back(std::move(log_path));
    view.params.push_back(std::move(params));
  }
  return view;
}

ProgressOptions ProgressOptionsFor(const study::Study& study) {
  ProgressOptions o;
  o.objective = study.objective.metric;
  o.minimize = study.objective.minimize;
  o.max_concurrent = study.cluster.max_concurrent;
  o.gpus_per_trial = study.job.nodes * study.job.gpus_per_node;
  // A tpe study proposes as results come in: its budget is [search] trials configurations x repeats.
  if (study.sampler == "tpe") o.budget = study.trials * std::max(1, study.repeats);
  o.repeats = std::max(1, study.repeats);
  return o;
}

namespace {

nlohmann::json Optional(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

nlohmann::json Document(const char* kind, const study::Study& study, const StudyView& view, const Progress& progress) {
  ProgressOptions options = ProgressOptionsFor(study);
  nlohmann::json trials = nlohmann::json::array();
  for (size_t i = 0; i < view.rows.size(); ++i) {
    const reports::TrialRow& r = view.rows[i];
    trials.push_back({{"id", r.trial_id},
                      {"key", r.trial_key},
                      {"state", r.state},
                      {"reason", r.reason},
                      {"job_id", r.job_id},
                      {"steps", r.steps},
                      {"total_steps",
                       view.progress[i].total_steps ? nlohmann::json(*view.progress[i].total_steps) : nlohmann::json()},
                      {"objective", Optional(TrialObjective(r))},
                      {"iters_per_s", Optional(r.iters_per_s)},
                      {"run_s", Optional(r.wall_time_s)},
                      {"log_path", view.log_paths[i]},
                      {"params", view.params[i]}});
  }
  // The best trial with its parameters: what to run next, without a second lookup in "trials".
  nlohmann::json best = BestJson(progress, options);
  for (size_t i = 0; i < view.rows.size() && best.is_object(); ++i) {
    if (view.rows[i].trial_key == best["trial"]) best["params"] = view.params[i];
  }
  return {{"version", kStatusJsonVersion},
          {"kind", kind},
          {"study",
           {{"name", study.name},
            {"file", study.path},
            {"database", study.database},
            {"objective", {{"metric", study.objective.metric}, {"goal", study.objective.minimize ? "min" : "max"}}}}},
          {"progress", ProgressJson(progress)},
          {"best", best},
          {"trials_left_out", view.left_out},
          {"trials", trials}};
}

}  // namespace

nlohmann::json StatusJson(const study::Study& study, const StudyView& view, const Progress& progress,
                          const run::RunHolder& run, const std::string& controller_job) {
  nlohmann::json j = Document("status", study, view, progress);
  if (auto configs = results::RankStudyConfigurations(study, view.rows))
    j["configurations"] = results::ConfigurationsJson(*configs, view.rows, view.params);
  nlohmann::json pid;
  if (!run.pid.empty()) {
    char* end = nullptr;
    long n = std::strtol(run.pid.c_str(), &end, 10);
    pid = end && *end == '\0' ? nlohmann::json(n) : nlohmann::json(run.pid);
  }
  // host and heartbeat_age_s come from the lease (null when only this host's lock is known);
  // stale: a lease left by a run that stopped renewing it, which the next run takes over.
  j["run"] = {{"going_on", run.going_on},
              {"pid", pid},
              {"host", run.host.empty() ? nlohmann::json() : nlohmann::json(run.host)},
              {"heartbeat_age_s", run.heartbeat_age_s ? nlohmann::json(*run.heartbeat_age_s) : nlohmann::json()},
              {"stale", run.stale},
              {"lease_timeout_s", study.lease_timeout_s},
              {"controller_job", controller_job.empty() ? nlohmann::json() : nlohmann::json(controller_job)}};
  return j;
}

nlohmann::json RunSummaryJson(const study::Study& study, const StudyView& view, const Progress& progress, int exit_code,
                              const nlohmann::json& slurm_commands) {
  nlohmann::json j = Document("run", study, view, progress);
  if (auto configs = results::RankStudyConfigurations(study, view.rows))
    j["configurations"] = results::ConfigurationsJson(*configs, view.rows, view.params);
  j["exit_code"] = exit_code;
  j["slurm_commands"] = slurm_commands;
  return j;
}

std::string DumpJson(const nlohmann::json& j) {
  // Invalid UTF-8 in a log-derived reason becomes U+FFFD rather than an exception.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// ---- LiveDisplay ----

LiveDisplay::LiveDisplay(std::ostream& out, std::streambuf* raw, int width)
    : out_(out), raw_(raw), width_(std::max(20, width)) {}

void LiveDisplay::Erase() {
  if (!raw_ || shown_lines_ == 0) return;
  out_.flush();
  // Up to the block's first line, then clear to the end of the screen.
  std::string seq = fmt::format("\r\x1b[{}A\x1b[J", shown_lines_);
  raw_->sputn(seq.data(), static_cast<std::streamsize>(seq.size()));
  raw_->pubsync();
  shown_lines_ = 0;
}

void LiveDisplay::Line(const std::string& line) {
  // A message that ended in a line break of its own (a command's stderr) leaves an empty line:
  // on a terminal it would only push the block down.
  if (raw_ && line.empty()) return;
  Erase();
  out_ << line << "\n";
  // The block stays at the bottom, under the lines.
  if (raw_ && !block_.empty() && shown_lines_ == 0) {
    out_ << block_;
    shown_lines_ = static_cast<int>(std::count(block_.begin(), block_.end(), '\n'));
  }
  out_.flush();
}

void LiveDisplay::Show(const Progress& progress, const ProgressOptions& options, const std::string& stamp) {
  if (!raw_) {
    std::string key = ProgressChangeKey(progress);
    if (key == last_key_) return;
    last_key_ = key;
    out_ << stamp << RenderProgressLine(progress, options);
    out_.flush();
    return;
  }
  // Each line cut to the terminal's width, so that no line wraps and Erase knows the count.
  std::string text = RenderProgressBlock(progress, options);
  block_.clear();
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = TerminalSafe(text.substr(start, end - start));
    if (static_cast<int>(line.size()) >= width_) {
      size_t cut = width_ - 2;
      while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
      line = line.substr(0, cut) + "~";
    }
    block_ += line + "\n";
    start = end + 1;
  }
  Erase();
  out_ << block_;
  out_.flush();
  shown_lines_ = static_cast<int>(std::count(block_.begin(), block_.end(), '\n'));
}

void LiveDisplay::Finish() {
  shown_lines_ = 0;
  block_.clear();
}

LiveDisplay::LineBuf::int_type LiveDisplay::LineBuf::overflow(int_type c) {
  if (c == traits_type::eof()) return traits_type::not_eof(c);
  char ch = traits_type::to_char_type(c);
  xsputn(&ch, 1);
  return c;
}

std::streamsize LiveDisplay::LineBuf::xsputn(const char* s, std::streamsize n) {
  for (std::streamsize i = 0; i < n; ++i) {
    if (s[i] == '\n') {
      display_.Line(line_);
      line_.clear();
    } else {
      line_ += s[i];
    }
  }
  return n;
}

}  // namespace sweep::cli
