// The user's view of a study: what `status`, `status --watch`, `run`'s live block and the --json documents
// show, read from the store in one place, and the terminal display that keeps `run`'s progress
// block at the bottom while log lines scroll above it. Reads only; safe while a run writes.
// Layer cli/ (namespace sweep::cli): the command line; parses, calls run/ and results/, prints.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "cli/progress.h"
#include "run/lease.h"
#include "reports/csv.h"
#include "store/store.h"
#include "study/study.h"

namespace sweep::cli {

// Version of the --json documents of `status`, `plan` and `run` (README: JSON output). Bump when a
// member is renamed, removed or changes meaning; adding a member keeps the version.
inline constexpr int kStatusJsonVersion = 1;

// The value `status` shows as a trial's objective; every status view (table, best so far, JSON)
// takes it from here, so one definition of a trial's final objective can replace it in one place.
std::optional<double> TrialObjective(const reports::TrialRow& row);

// `status`'s trial table (issue 42): a study of at most kStatusAllRows trials, or `all`
// (`status --all`), lists every trial in id order; a larger one the kStatusTopRows best by the
// objective's final value (then running and other trials, in id order) and a line saying how many
// more there are and how to list them; then every trial counted by state ("12 trials: 9 completed, ...").
inline constexpr size_t kStatusAllRows = 50;
inline constexpr size_t kStatusTopRows = 20;
std::string RenderStatusTable(const std::vector<reports::TrialRow>& rows, const std::vector<std::string>& param_names,
                              const std::string& objective, bool minimize, bool all);

// A study as `status` shows it, read once.
struct StudyView {
  std::vector<reports::TrialRow> rows;  // CollectTrialRows, in trial id order
  std::vector<ProgressTrial> progress;  // the same trials, for ComputeProgress
  std::vector<std::string> log_paths;   // the same trials' current logs ("" before submission)
  std::vector<nlohmann::json> params;   // the same trials' values, as stored (typed)
  int left_out = 0;                     // trials of an earlier study file, not shown
};

// Reads the rows and, for trials that have not ended, their total iterations (Megatron's
// train_iters metric) for the ETA.
Result<StudyView> ReadStudyView(store::Store& store, const study::Study& study, int64_t study_id, double now);
// The same of `trials` as the caller holds them (the run loop's tick: TickReport::trials, this study
// file's trials) with `param_names` (ParamNames, read once): the trials are not listed again.
Result<StudyView> ReadStudyView(store::Store& store, const study::Study& study, int64_t study_id, double now,
                                const std::vector<store::TrialRecord>& trials,
                                const std::vector<std::string>& param_names, int left_out);

ProgressOptions ProgressOptionsFor(const study::Study& study);

// `status --json`: {version, kind: "status", study, progress, best, trials, run}. `run`: who runs
// the study (going_on, host, pid, heartbeat_age_s, stale; lease.h) and `controller_job`, the last
// `run --as-job` controller's Slurm job id (run::ControllerJobOf; "": none, null in the JSON).
nlohmann::json StatusJson(const study::Study& study, const StudyView& view, const Progress& progress,
                          const run::RunHolder& run, const std::string& controller_job);

// `run --json`'s document at the end: StatusJson's members with kind "run", plus exit_code and
// the Slurm commands the run sent.
nlohmann::json RunSummaryJson(const study::Study& study, const StudyView& view, const Progress& progress, int exit_code,
                              const nlohmann::json& slurm_commands);

std::string DumpJson(const nlohmann::json& j);

// Where `run`'s text goes: on a terminal, log lines scroll above a progress block redrawn in
// place; elsewhere (a pipe, a file, --detach's log) log lines as they come and one plain progress
// line whenever the counts or the best trial change. Everything but the cursor movements goes
// through `out`, which the CLI guards (base/terminal.h): no escape sequence from a value reaches
// the terminal. Not thread-safe.
class LiveDisplay {
 public:
  // `raw`: the terminal itself, for the cursor movements (nullptr: not a terminal). `width`: the
  // terminal's columns; block lines are cut to it so that redrawing knows how many lines to erase.
  LiveDisplay(std::ostream& out, std::streambuf* raw, int width);

  // A complete line of the run's log (without its line break).
  void Line(const std::string& line);
  // The current progress: redraws the block (terminal) or prints a line if it changed (pipe).
  // `stamp`: prefix of the pipe line ("[time] ").
  void Show(const Progress& progress, const ProgressOptions& options, const std::string& stamp);
  // The block stays where it is; what follows goes below it.
  void Finish();

  // A stream for the run loop's log: every complete line goes to Line().
  std::ostream& log() { return log_; }

 private:
  class LineBuf : public std::streambuf {
   public:
    explicit LineBuf(LiveDisplay& display) : display_(display) {}

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;

   private:
    LiveDisplay& display_;
    std::string line_;
  };
  void Erase();

  std::ostream& out_;
  std::streambuf* raw_;
  int width_;
  int shown_lines_ = 0;  // lines of the block on the screen now
  std::string block_;    // the block last drawn
  std::string last_key_;
  LineBuf buf_{*this};
  std::ostream log_{&buf_};
};

}  // namespace sweep::cli
