// See compare.h.
#include "results/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "base/atomic_file.h"
#include "results/report_data.h"
#include "results/phase_seeds.h"
#include "results/study_trials.h"
#include "store/store.h"
#include "study/loader.h"

namespace sweep::results {

Result<reports::Comparison> CollectComparison(const std::vector<std::string>& study_paths,
                                              const CompareOptions& options, double now) {
  if (study_paths.size() < 2) return Status::InvalidArgument("compare needs at least two study files");
  struct Loaded {
    study::Study study;
    std::unique_ptr<store::Store> store;
    int64_t id = 0;
  };
  std::vector<Loaded> loaded;
  for (const std::string& path : study_paths) {
    auto s = study::LoadStudy(path);
    if (!s.ok()) return s.status();
    Loaded l;
    l.study = std::move(*s);
    SWEEP_RETURN_IF_ERROR(ResolveSeeds(l.study));
    auto db = store::Store::OpenReadOnly(l.study.database);
    if (!db.ok()) {
      return Status::FailedPrecondition(
          fmt::format("{}: no results yet ({}): run it first", path, db.status().message()));
    }
    l.store = std::move(*db);
    auto rec = l.store->GetStudy(l.study.name);
    if (!rec.ok()) return Status::FailedPrecondition(fmt::format("{}: study '{}' has not run", path, l.study.name));
    l.id = rec->id;
    const study::Study& first = loaded.empty() ? l.study : loaded.front().study;
    if (l.study.objective.metric != first.objective.metric || l.study.objective.minimize != first.objective.minimize) {
      return Status::InvalidArgument(
          fmt::format("{} {}s {} but {} {}s {}: the studies must share the objective to be compared", first.path,
                      first.objective.minimize ? "minimise" : "maximise", first.objective.metric, path,
                      l.study.objective.minimize ? "minimise" : "maximise", l.study.objective.metric));
    }
    loaded.push_back(std::move(l));
  }
  const bool minimize = loaded.front().study.objective.minimize;

  reports::Comparison c;
  c.generated_at = now;
  c.version = options.version;
  if (options.target) {
    c.target = options.target;
    c.target_basis = "set for this comparison";
  } else {
    // Each study's best final value, from its own report; the common target is the worst of them.
    std::vector<double> bests;
    std::string worst_study;
    for (auto& l : loaded) {
      auto r = CollectReport(*l.store, l.study, l.id, ReportOptionsFor(l.study), now);
      if (!r.ok()) return r.status();
      auto a = reports::Analyze(*r);
      if (!a.recommended) {
        bests.clear();
        c.target_basis =
            fmt::format("none: {} has no completed trial with a value of {}", l.study.path, l.study.objective.metric);
        break;
      }
      // The best configuration's mean for a study with repeats, else the best trial's value.
      double v = a.recommended_config ? *r->configs->groups[*a.recommended_config].mean
                                      : *r->trials[*a.recommended].final_value;
      if (bests.empty() || Better(*reports::CommonTarget(bests, minimize), v, minimize)) worst_study = l.study.name;
      bests.push_back(v);
    }
    c.target = reports::CommonTarget(bests, minimize);
    if (c.target) {
      c.target_basis = fmt::format(
          "the worst of the studies' best final values ({}'s), so that every study's best reaches it", worst_study);
    }
  }
  for (auto& l : loaded) {
    ReportOptions o = ReportOptionsFor(l.study);
    o.version = options.version;
    o.target = c.target;
    auto r = CollectReport(*l.store, l.study, l.id, o, now);
    if (!r.ok()) return r.status();
    reports::ComparedStudy s;
    s.report = std::move(*r);
    s.analysis = reports::Analyze(s.report);
    c.studies.push_back(std::move(s));
  }
  return c;
}

Status WriteComparison(const reports::Comparison& comparison, const std::string& html_path,
                       const std::string& csv_dir) {
  if (html_path.empty() && csv_dir.empty()) return Status::InvalidArgument("no comparison file asked for");
  if (!csv_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(csv_dir, ec);
    if (ec) return Status::IOError(fmt::format("cannot create {}: {}", csv_dir, ec.message()));
    AtomicFile csv((std::filesystem::path(csv_dir) / "compare.csv").string());
    csv.Append(reports::RenderCompareCsv(comparison));
    SWEEP_RETURN_IF_ERROR(csv.Commit());
  }
  if (!html_path.empty()) {
    AtomicFile html(html_path);
    html.Append(reports::RenderCompareHtml(comparison));
    SWEEP_RETURN_IF_ERROR(html.Commit());
  }
  return Status::OK();
}

}  // namespace sweep::results
