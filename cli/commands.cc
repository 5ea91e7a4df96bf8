// The command line's shared context (commands.h): loading the study file, opening the store and
// the transport, and the study positional most commands take.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include "base/text.h"

#include "cli/commands.h"
#include "run/connect.h"
#include "results/report_data.h"
#include "results/report_files.h"
#include "results/phase_seeds.h"
#include "results/study_trials.h"
#include "run/trial_script.h"
#include "study/loader.h"

namespace sweep::cli {

Status App::LoadStudyFile(Space space) {
  auto s = study::LoadStudy(study_path);
  if (!s.ok()) return s.status();
  study = std::move(*s);
  SWEEP_RETURN_IF_ERROR(run::CheckStudyTemplate(study));
  for (const auto& w : study.warnings) std::cerr << "warning: " << w << "\n";
  // Phase 2: phase 1's ranking is read once, here; every later expansion takes it as data.
  if (space == Space::kNotNeeded) return Status::OK();
  SWEEP_RETURN_IF_ERROR(results::ResolveSeeds(study));
  return Status::OK();
}

Status App::OpenStore(bool read_only) {
  auto st = read_only ? store::Store::OpenReadOnly(study.database) : store::Store::Open(study.database);
  if (!st.ok()) return st.status();
  store = std::move(*st);
  return Status::OK();
}

Status App::Connect() {
  auto t = run::OpenTransport(study.cluster, accept_host_key, study.dir);
  if (!t.ok() && t.status().code() == Status::Code::kInvalidArgument) {
    return t.status().WithContext(study.path);  // a setting of the study file's [cluster]
  }
  if (!t.ok()) return t.status();
  transport = std::move(*t);
  return Status::OK();
}

void AddStudyArgument(CLI::App* sub, App& app) {
  sub->add_option("study", app.study_path, "Study file (TOML)")->required()->check(CLI::ExistingFile);
}

// A mistyped name is compared with the keys' beginnings of its length too: 't-e23x' is one edit
// from 't-e23a4b5c6d7e', not eight.
std::string DidYouMeanTrial(std::string_view name, const std::vector<std::string_view>& keys) {
  if (std::string whole = DidYouMean(name, keys); !whole.empty()) return whole;
  std::vector<std::string_view> heads;
  for (std::string_view k : keys) heads.push_back(k.substr(0, name.size()));
  std::string_view best = ClosestWord(name, heads);
  if (best.empty()) return "";
  size_t i = std::find(heads.begin(), heads.end(), best) - heads.begin();
  return fmt::format(" (did you mean '{}'?)", keys[i]);
}

int TerminalWidth() {
  winsize ws{};
  return ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
}

}  // namespace sweep::cli
