// SqliteStore, metrics out: the summaries, and each shape of read the report, status and the run loop take.
#include "store/sqlite_store.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

#include "store/sql.h"

namespace sweep::store {

Result<const std::string*> SqliteStore::MetricName(int64_t name_id) {
  auto it = names_by_id_.find(name_id);
  if (it != names_by_id_.end()) return &it->second;
  Query q = Use(stmts_.metric_names, "read metric names");
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { names_by_id_[q.Int(0)] = q.Text(1); }));
  it = names_by_id_.find(name_id);
  if (it == names_by_id_.end())
    return Status::Internal(path_ + ": metric number " + std::to_string(name_id) + " has no name");
  return &it->second;
}

Status SqliteStore::ReadSummaries(Query& q, int trial_col, std::vector<TrialSummary>& out) {
  for (;;) {
    auto row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    int64_t trial_id = trial_col >= 0 ? q.Int(trial_col) : 0;
    if (out.empty() || (trial_col >= 0 && out.back().trial_id != trial_id)) {
      // A trial's few metrics grew by doubling: room for 8 held for 5 is 2 KB a trial, 20 MB of a
      // 10,000-trial report (issue 42). Freed now, the room is the next trial's.
      if (!out.empty()) out.back().metrics.shrink_to_fit();
      out.emplace_back().trial_id = trial_id;
    }
    MetricSummary& m = out.back().metrics.emplace_back();
    int name_col = trial_col >= 0 ? trial_col + 1 : 0;
    auto name = MetricName(q.Int(name_col));
    if (!name.ok()) return name.status();
    m.name = **name;
    ReadSummary(q, name_col + 1, m);
  }
  for (TrialSummary& t : out) {
    std::sort(t.metrics.begin(), t.metrics.end(),
              [](const MetricSummary& a, const MetricSummary& b) { return a.name < b.name; });
  }
  return Status::OK();
}

Status SqliteStore::FillSeries(TrialSummary& t, const std::vector<std::string>& series_of) {
  for (const std::string& name : series_of) {
    auto found =
        std::find_if(t.metrics.begin(), t.metrics.end(), [&](const MetricSummary& m) { return m.name == name; });
    if (found == t.metrics.end() || found->complete == 0) continue;
    MetricSummary& m = *found;
    auto name_id = name_ids_.find(name);
    int64_t id = 0;
    if (name_id != name_ids_.end()) {
      id = name_id->second;
    } else {
      Query q = Use(stmts_.metric_name_id, "look up metric " + name);
      q.BindText(1, name);
      auto row = q.Step();
      if (!row.ok()) return row.status();
      if (!*row) continue;
      id = name_ids_[name] = q.Int(0);  // an existing number: safe to keep, as MetricNameId does
    }
    if (!m.buckets.empty()) continue;  // named twice in series_of
    m.buckets.reserve(static_cast<size_t>(m.complete));
    Query q = Use(stmts_.buckets, "read the series of " + name + " of trial " + std::to_string(t.trial_id));
    SWEEP_RETURN_IF_ERROR(ReadBuckets(q, t.trial_id, id, m.buckets));
  }
  return Status::OK();
}

Result<std::optional<int64_t>> SqliteStore::ExistingNameId(const std::string& name) {
  if (auto it = name_ids_.find(name); it != name_ids_.end()) return std::optional<int64_t>(it->second);
  Query q = Use(stmts_.metric_name_id, "look up metric " + name);
  q.BindText(1, name);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<int64_t>();
  return std::optional<int64_t>(name_ids_[name] = q.Int(0));  // an existing number: safe to keep
}

Status SqliteStore::FillStudySeries(int64_t study_id, std::vector<TrialSummary>& all, const std::string& name) {
  auto id = ExistingNameId(name);
  if (!id.ok()) return id.status();
  if (!*id) return Status::OK();
  Query q = Use(stmts_.study_buckets, "read the series of " + name + " of study " + std::to_string(study_id));
  q.BindInt(1, study_id);
  q.BindInt(2, **id);
  auto next = all.begin();
  MetricSummary* m = nullptr;
  int64_t at = -1;  // the trial `m` belongs to
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] {
    int64_t trial_id = q.Int(0);
    if (trial_id != at) {
      at = trial_id;
      m = nullptr;
      while (next != all.end() && next->trial_id < trial_id) ++next;
      if (next != all.end() && next->trial_id == trial_id) {
        auto found = std::find_if(next->metrics.begin(), next->metrics.end(),
                                  [&](const MetricSummary& s) { return s.name == name; });
        // Named twice in series_of: read once.
        if (found != next->metrics.end() && found->buckets.empty()) m = &*found, m->buckets.reserve(m->complete);
      }
    }
    if (!m) return;
    SeriesBucket b;
    b.first_step = q.Int(1);
    b.last_step = q.Int(2);
    b.last_time_s = q.Real(3);
    b.points = q.Int(4);
    b.finite = q.Int(5);
    b.sum = q.Real(6);
    b.smooth_min = q.Real(7);
    b.smooth_max = q.Real(8);
    m->buckets.push_back(b);
  }));
  return Status::OK();
}

Result<TrialSummary> SqliteStore::Summary(int64_t trial_id, const std::vector<std::string>& series_of) {
  // A writer's kept summaries are what the database holds (as of the end of its current transaction).
  if (series_of.empty()) {
    auto kept = SummaryFromCache(trial_id);
    if (!kept.ok()) return kept.status();
    if (*kept) return std::move(**kept);
  }
  std::vector<TrialSummary> one;
  {
    Query q = Use(stmts_.trial_summary, "read metric summaries of trial " + std::to_string(trial_id));
    q.BindInt(1, trial_id);
    SWEEP_RETURN_IF_ERROR(ReadSummaries(q, -1, one));
  }
  if (one.empty()) one.emplace_back();
  one[0].trial_id = trial_id;
  SWEEP_RETURN_IF_ERROR(FillSeries(one[0], series_of));
  return std::move(one[0]);
}

Result<std::vector<TrialSummary>> SqliteStore::Summaries(int64_t study_id, const std::vector<std::string>& series_of) {
  std::vector<TrialSummary> all;
  {
    Query q = Use(stmts_.study_summaries, "read metric summaries of study " + std::to_string(study_id));
    q.BindInt(1, study_id);
    SWEEP_RETURN_IF_ERROR(ReadSummaries(q, 0, all));
  }
  // One statement per series for the whole study, not one per trial (issue 42: 10,000 trials).
  for (const std::string& name : series_of) SWEEP_RETURN_IF_ERROR(FillStudySeries(study_id, all, name));
  return all;
}

Result<std::vector<MetricRow>> SqliteStore::Metrics(int64_t trial_id) {
  auto table = MetricTable(trial_id);
  if (!table.ok()) return table.status();
  size_t n = 0;
  for (const MetricColumns& c : *table) n += c.steps.size();
  std::vector<MetricRow> rows;
  rows.reserve(n);
  for (const MetricColumns& c : *table) {
    for (size_t i = 0; i < c.steps.size(); ++i) rows.push_back({c.steps[i], c.times[i], c.name, c.values[i]});
  }
  return rows;
}

Result<std::vector<MetricColumns>> SqliteStore::MetricTable(int64_t trial_id) {
  std::string what = "read metrics of trial " + std::to_string(trial_id);
  // The summary gives each metric's size: every column is allocated once.
  auto summary = Summary(trial_id, {});
  if (!summary.ok()) return summary.status();
  std::vector<MetricColumns> table;
  table.reserve(summary->metrics.size());
  std::vector<int> slot;  // by metric number: index into table, -1 if none yet
  auto column = [&](int64_t name_id) -> Result<MetricColumns*> {
    if (name_id < 0) return Status::Internal(path_ + ": " + what + ": negative metric number");
    if (static_cast<size_t>(name_id) >= slot.size()) slot.resize(static_cast<size_t>(name_id) + 1, -1);
    if (slot[name_id] < 0) {
      auto name = MetricName(name_id);
      if (!name.ok()) return name.status();
      slot[name_id] = static_cast<int>(table.size());
      MetricColumns& c = table.emplace_back();
      c.name = **name;
      if (const MetricSummary* m = summary->Find(c.name)) {
        // A run may add rows between the two reads: a few more than counted only grow once.
        size_t n = static_cast<size_t>(m->points);
        c.steps.reserve(n);
        c.times.reserve(n);
        c.values.reserve(n);
      }
    }
    return &table[slot[name_id]];
  };
  {
    // In key order (step, then metric number): no sort and no join in SQL.
    Query q = Use(stmts_.metrics, what);
    q.BindInt(1, trial_id);
    int64_t last_id = -1;
    MetricColumns* c = nullptr;
    for (;;) {
      auto row = q.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      int64_t id = q.Int(0);
      if (id != last_id || !c) {
        auto col = column(id);
        if (!col.ok()) return col.status();
        c = *col;
        last_id = id;
      }
      c->steps.push_back(q.Int(1));
      c->times.push_back(q.Real(2));
      c->values.push_back(q.Real(3));
    }
  }
  std::sort(table.begin(), table.end(), [](const MetricColumns& a, const MetricColumns& b) { return a.name < b.name; });
  return table;
}

Result<std::vector<MetricRow>> SqliteStore::MetricSeries(int64_t trial_id, const std::string& name) {
  Query q = Use(stmts_.metric_series, "read " + name + " of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  q.BindText(2, name);
  std::vector<MetricRow> rows;
  for (;;) {
    auto row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) return rows;
    rows.push_back(ReadMetric(q));
  }
}

Result<std::vector<std::vector<CurvePoint>>> SqliteStore::MetricCurves(int64_t trial_id,
                                                                       const std::vector<std::string>& names) {
  std::vector<std::vector<CurvePoint>> curves(names.size());
  std::vector<int> slot;  // by metric number: index into curves, -1 for a metric not asked for
  for (size_t k = 0; k < names.size(); ++k) {
    auto id = ExistingNameId(names[k]);
    if (!id.ok()) return id.status();
    if (!*id) continue;  // no trial logged it
    if (static_cast<size_t>(**id) >= slot.size()) slot.resize(static_cast<size_t>(**id) + 1, -1);
    slot[**id] = static_cast<int>(k);
  }
  if (slot.empty()) return curves;
  // In key order (step, then metric number): each curve comes out in step order.
  Query q = Use(stmts_.metrics, "read curves of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  for (;;) {
    auto row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) return curves;
    int64_t id = q.Int(0);
    if (id < 0 || static_cast<size_t>(id) >= slot.size() || slot[id] < 0) continue;
    curves[slot[id]].push_back({q.Int(1), q.Real(2), q.Real(3)});
  }
}

Result<std::optional<MetricRow>> SqliteStore::LastMetric(int64_t trial_id, const std::string& name) {
  Query q = Use(stmts_.last_metric, "read last " + name + " of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  q.BindText(2, name);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<MetricRow>();
  return std::optional<MetricRow>(ReadMetric(q));
}

Result<std::vector<CurvePoint>> SqliteStore::MetricRange(int64_t trial_id, const std::string& name, int64_t first_step,
                                                         int64_t last_step, size_t before) {
  std::string what = "read steps " + std::to_string(first_step) + " to " + std::to_string(last_step) + " of " + name +
                     " of trial " + std::to_string(trial_id);
  std::vector<CurvePoint> points;
  if (before > 0) {
    Query q = Use(stmts_.metric_before, what);
    q.BindInt(1, trial_id);
    q.BindText(2, name);
    q.BindInt(3, first_step);
    q.BindInt(4, static_cast<int64_t>(before));
    SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { points.push_back({q.Int(0), q.Real(1), q.Real(2)}); }));
    std::reverse(points.begin(), points.end());
  }
  Query q = Use(stmts_.metric_range, what);
  q.BindInt(1, trial_id);
  q.BindText(2, name);
  q.BindInt(3, first_step);
  q.BindInt(4, last_step);
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { points.push_back({q.Int(0), q.Real(1), q.Real(2)}); }));
  return points;
}

Result<std::vector<double>> SqliteStore::MetricTail(int64_t trial_id, const std::string& name, size_t n) {
  Query q = Use(stmts_.metric_tail, "read the last points of " + name + " of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  q.BindText(2, name);
  q.BindInt(3, static_cast<int64_t>(n));
  std::vector<double> values;
  values.reserve(n);
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { values.push_back(q.Real(0)); }));
  std::reverse(values.begin(), values.end());
  return values;
}

Result<int64_t> SqliteStore::CountMetrics(int64_t trial_id) {
  Query q = Use(stmts_.count_metrics, "count metrics of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(path_ + ": count(*) returned no row");
  return q.Int(0);
}

}  // namespace sweep::store
