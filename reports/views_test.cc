// Tests of issue 17's report views on plain data: the headline by study kind (performance or
// hyperparameter), parameter importance, best so far against cost, numeric and log axes for
// continuous parameters, stopped trials in the by-parameter charts, parallel coordinates, and a
// study that maximises its objective.
#include <catch2/catch.hpp>
#include <cmath>
#include <regex>
#include <string>

#include "reports/compare_report.h"
#include "reports/csv.h"
#include "reports/importance_csv.h"
#include "reports/html_report.h"
#include "reports/html_text.h"
#include "reports/study_report.h"

namespace sweep::reports {
namespace {

// A float parameter as a study file would give it: three significant digits.
ParamCell Sig3(double v) {
  std::string text = FormatSig(v, 3);
  return ParamCell(std::stod(text), text);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The HTML of one <section id="...">.
std::string Section(const std::string& html, const std::string& id) {
  size_t at = html.find("<section id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</section>", at) - at);
}

// A hyperparameter study: lr (sampled on a log scale) decides the loss, optimizer a little, seed
// nothing; every trial runs at the same speed. Trial i: lr = 10^(-4 + 3 i / (n-1)).
StudyReport HpoReport(int n = 24, bool minimize = true) {
  StudyReport r;
  r.meta.study_name = "hpo";
  r.meta.objective_metric = minimize ? "lm_loss" : "accuracy";
  r.meta.minimize = minimize;
  r.meta.param_names = {"lr", "optimizer", "seed"};
  r.meta.param_log = {true, false, false};
  r.meta.kind = StudyKind::kHyperparameter;
  r.meta.kind_basis = "no parameter changes the speed of training";
  r.meta.cpus_per_task = 1;
  for (int i = 0; i < n; ++i) {
    TrialSummary t;
    t.id = i + 1;
    t.key = "t-" + std::to_string(100 + i);
    double lr = std::pow(10.0, -4 + 3.0 * i / (n - 1));
    bool adam = i % 2 == 0;
    t.param_values = {Sig3(lr), ParamCell(adam ? "adam" : "sgd"), ParamCell(i % 3)};
    // Best near lr = 1e-2.5; adam slightly better.
    double loss = 0.3 + 0.2 * std::pow(std::log10(lr) + 2.5, 2) - (adam ? 0.01 : 0) + 0.001 * (i % 5);
    t.final_value = minimize ? loss : 1 - loss;
    t.final_spread = 0.004;
    t.final_points = 10;
    t.state = i % 6 == 5 ? "pruned" : "completed";
    t.iters_per_s = 50 + 0.1 * (i % 3);
    t.steps = t.state == "pruned" ? 100 : 300;
    t.started_at = 1000.0 + 100 * i;
    t.wall_s = t.state == "pruned" ? 20 : 60;
    t.ended_at = *t.started_at + *t.wall_s;
    for (int s = 10; s <= t.steps; s += 10)
      t.curve.push_back({s, s / 50.0, *t.final_value + (minimize ? 1 : -1) * 3.0 / s});
    r.trials.push_back(t);
  }
  r.baseline = 0;
  r.baseline_note = "the first completed trial (the study names no baseline)";
  return r;
}

TEST_CASE("A hyperparameter study leads with the best final value, its noise and the runner-up gap", "[report]") {
  StudyReport r = HpoReport();
  Analysis a = Analyze(r);
  REQUIRE(a.recommended);
  REQUIRE(a.runner_up);
  std::string html = RenderHtmlReport(r);
  std::string head = Section(html, "recommendation");
  const TrialSummary& best = r.trials[*a.recommended];
  const TrialSummary& second = r.trials[*a.runner_up];
  CHECK(head.find(FormatSig(*best.final_value, 4) + " ± " + FormatSig(0.004, 2)) != std::string::npos);
  CHECK(head.find("ahead of the runner-up") != std::string::npos);
  CHECK(head.find(FormatSig(std::fabs(*best.final_value - *second.final_value), 3)) != std::string::npos);
  // No speedup boxes and no x1.00 anywhere in the headline; no throughput bars for equal speeds.
  CHECK(head.find("class=\"factor") == std::string::npos);
  CHECK(head.find("×1.00") == std::string::npos);
  CHECK(Section(html, "throughput").find("<svg") == std::string::npos);
  CHECK(Section(html, "throughput").find("same speed") != std::string::npos);
  // The first completed trial is not a baseline the study chose: not in the headline.
  CHECK(head.find("baseline") == std::string::npos);

  // The same numbers as a performance study keep the decomposition's wording.
  r.meta.kind = StudyKind::kPerformance;
  std::string perf = Section(RenderHtmlReport(r), "recommendation");
  CHECK(perf.find("ahead of the runner-up") == std::string::npos);
}

TEST_CASE("A runner-up within the noise of the last points is said to be indistinguishable", "[report]") {
  StudyReport r = HpoReport();
  for (auto& t : r.trials) t.final_spread = 0.5;  // far noisier than the gap
  std::string head = Section(RenderHtmlReport(r), "recommendation");
  CHECK(head.find("within the noise") != std::string::npos);
  for (auto& t : r.trials) t.final_spread = 1e-6;
  head = Section(RenderHtmlReport(r), "recommendation");
  CHECK(head.find("within the noise") == std::string::npos);
  CHECK(head.find("the larger spread") != std::string::npos);
}

TEST_CASE("Importance: the parameter that drives the final value comes first, noise near 0", "[report]") {
  StudyReport r = HpoReport(30);
  Importances imp = ParamImportances(r);
  REQUIRE(imp.why_none.empty());
  REQUIRE(imp.trials == 30);  // the 5 pruned ones at equal step, step 100
  REQUIRE(imp.stopped == 5);
  REQUIRE(imp.at_step == 100);
  REQUIRE(imp.params.size() == 3);
  CHECK(r.meta.param_names[imp.params[0].param] == "lr");
  CHECK(imp.params[0].epsilon2 > 0.5);
  CHECK(imp.params[0].groups == 5);  // 30 distinct values in 5 groups by rank
  CHECK(imp.params[0].by_rank);
  double sum = 0;
  for (const auto& p : imp.params) sum += p.share;
  CHECK(sum == Approx(1));
  for (const auto& p : imp.params) {
    if (r.meta.param_names[p.param] == "seed") CHECK(p.epsilon2 < 0.05);
  }
  // Made to depend on the optimizer alone, the optimizer comes first.
  for (auto& t : r.trials) {
    t.state = "completed";
    t.final_value = t.param_values[1].text == "adam" ? 1.0 + 0.001 * t.id : 2.0;
  }
  imp = ParamImportances(r);
  CHECK(r.meta.param_names[imp.params[0].param] == "optimizer");
  // Too few trials: no estimate, and the report says why.
  StudyReport few = HpoReport(3);
  CHECK(!ParamImportances(few).why_none.empty());
  CHECK(Section(RenderHtmlReport(few), "importance").find("Not estimated") != std::string::npos);
  CHECK(Section(RenderHtmlReport(r), "importance").find("optimizer") != std::string::npos);
}

TEST_CASE("Importance: groups that cannot carry an estimate say so, and stopped trials are counted", "[report]") {
  // Issue 31: 6 completed trials of a tpe study, each lr its own value, lr deciding the loss, showed
  // "lr 0% (ε² 0.00, 6 groups)". A numeric parameter with fewer than 2 trials per value is grouped
  // by rank, and then carries its effect.
  StudyReport r = HpoReport(6);
  for (size_t i = 0; i < r.trials.size(); ++i) {
    r.trials[i].state = "completed";
    r.trials[i].final_value = 0.3 + 0.05 * static_cast<double>(i) + 0.002 * static_cast<double>(i % 2);
  }
  Importances imp = ParamImportances(r);
  REQUIRE(imp.why_none.empty());
  REQUIRE(imp.trials == 6);
  REQUIRE(r.meta.param_names[imp.params[0].param] == "lr");
  CHECK(imp.params[0].estimable);
  CHECK(imp.params[0].groups == 2);
  CHECK(imp.params[0].epsilon2 > 0.3);
  std::string section = Section(RenderHtmlReport(r), "importance");
  CHECK(section.find("6 groups") == std::string::npos);

  // A categorical parameter with a value per trial cannot be estimated: said, not shown as 0%.
  for (size_t i = 0; i < r.trials.size(); ++i) r.trials[i].param_values[1] = ParamCell("opt" + std::to_string(i));
  imp = ParamImportances(r);
  const ParamImportance* optimizer = nullptr;
  for (const auto& p : imp.params) {
    if (r.meta.param_names[p.param] == "optimizer") optimizer = &p;
  }
  REQUIRE(optimizer);
  CHECK(!optimizer->estimable);
  CHECK(optimizer->share == 0);
  CHECK(r.meta.param_names[imp.params.back().param] == "optimizer");  // after the estimable ones
  section = Section(RenderHtmlReport(r), "importance");
  CHECK(section.find("not estimable: 6 groups of 6 trials") != std::string::npos);
  CHECK(section.find("0% (ε² 0.00, 6 groups)") == std::string::npos);
  // importance.csv leaves its numbers empty rather than 0 (and its step: final values).
  CHECK(RenderImportanceCsv(r).find("optimizer,false,6,,,6,\n") != std::string::npos);
}

// Issue 31's study: 6 completed trials of a tpe study, each its own lr, and the lowest lr pruned at
// step 40 at 0.58. Among the survivors' final values lr shows nothing (0.33 to 0.36, no trend: what
// stopped the low lr is gone); at step 40 every trial is behind in the order of its lr. Curves run
// through (10, 1.0), (40, the value at 40) and (100, the final value); `batch` alternates, no effect.
StudyReport PrunedLowLrReport() {
  StudyReport r;
  r.meta.study_name = "tpe";
  r.meta.objective_metric = "lm_loss";
  r.meta.param_names = {"lr", "batch"};
  r.meta.param_log = {true, false};
  r.meta.kind = StudyKind::kHyperparameter;
  r.meta.cpus_per_task = 1;
  const double lr[] = {0.001, 0.002, 0.005, 0.01, 0.03, 0.06, 0.12};
  const double at40[] = {0.58, 0.52, 0.47, 0.43, 0.41, 0.40, 0.395};
  const double final[] = {0, 0.36, 0.33, 0.35, 0.34, 0.36, 0.33};
  for (int i = 0; i < 7; ++i) {
    TrialSummary t;
    t.id = i + 1;
    t.key = "t-" + std::to_string(i);
    t.param_values = {Sig3(lr[i]), ParamCell(i % 2 ? 32 : 64)};
    t.state = i == 0 ? "pruned" : "completed";
    t.steps = i == 0 ? 40 : 100;
    t.final_value = i == 0 ? at40[0] : final[i];
    t.iters_per_s = 10;
    t.started_at = 1000.0 + 100 * i;
    t.wall_s = t.steps / 10.0;
    t.ended_at = *t.started_at + *t.wall_s;
    for (int s = 10; s <= t.steps; s += 10) {
      double v = s <= 40 ? 1.0 + (at40[i] - 1.0) * (s - 10) / 30.0 : at40[i] + (final[i] - at40[i]) * (s - 40) / 60.0;
      t.curve.push_back({s, s / 10.0, v});
    }
    r.trials.push_back(t);
  }
  return r;
}

TEST_CASE("Importance: a pruned trial counts at equal step, so a continuous lr's effect shows", "[report]") {
  StudyReport r = PrunedLowLrReport();
  Importances imp = ParamImportances(r);
  REQUIRE(imp.why_none.empty());
  CHECK(imp.trials == 7);
  CHECK(imp.stopped == 1);
  CHECK(imp.stopped_left_out == 0);
  REQUIRE(imp.at_step == 40);
  REQUIRE(r.meta.param_names[imp.params[0].param] == "lr");
  CHECK(imp.params[0].estimable);
  CHECK(imp.params[0].by_rank);  // 7 values, one trial each: 2 groups by rank, not 7 of one
  CHECK(imp.params[0].groups == 2);
  CHECK(imp.params[0].epsilon2 > 0.4);  // 0.48: two groups of 4 and 3 trials, 0.50 against 0.40 at step 40
  CHECK(imp.params[0].share > 0.9);
  std::string section = Section(RenderHtmlReport(r), "importance");
  CHECK(section.find("From 7 trials' smoothed lm_loss at step 40") != std::string::npos);
  CHECK(section.find("6 completed, 1 stopped early") != std::string::npos);
  CHECK(section.find("2 groups by rank") != std::string::npos);
  CHECK(section.find("0% (ε² 0.00, 7 groups)") == std::string::npos);
  CHECK(section.find("Left out") == std::string::npos);
  CHECK(RenderImportanceCsv(r).starts_with("param,log,groups,epsilon2,share,trials,step\nlr,true,2,"));
  CHECK(RenderImportanceCsv(r).find(",7,40\n") != std::string::npos);

  // Left out, the pruned trial would take lr's effect with it: the survivors' final values alone
  // give it nothing. (What the report showed before; the comparison above is what changed.)
  StudyReport survivors = r;
  survivors.trials.erase(survivors.trials.begin());
  imp = ParamImportances(survivors);
  REQUIRE(imp.why_none.empty());
  CHECK(!imp.at_step);
  CHECK(imp.trials == 6);
  for (const auto& p : imp.params) {
    if (survivors.meta.param_names[p.param] == "lr") CHECK(p.epsilon2 < 0.1);
  }
}

TEST_CASE("Importance: trials it leaves out are counted in the report, with the reason", "[report]") {
  // The pruned trial stopped at step 20, before a quarter of the completed trials' length (25):
  // comparing there would compare the start of training, so it is left out, and said so.
  StudyReport r = PrunedLowLrReport();
  r.trials[0].curve.resize(2);
  r.trials[0].steps = 20;
  r.trials[0].final_value = r.trials[0].curve.back().value;
  // A running trial and a failed one with values are left out too.
  TrialSummary running = r.trials[1], failed = r.trials[2];
  running.id = 8, failed.id = 9;
  running.state = "running";
  failed.state = "node_fail";
  r.trials.push_back(running);
  r.trials.push_back(failed);
  Importances imp = ParamImportances(r);
  CHECK(imp.stopped_left_out == 1);
  CHECK(imp.min_step == 25);
  CHECK(imp.running_left_out == 1);
  CHECK(imp.failed_left_out == 1);
  CHECK(imp.trials == 6);
  CHECK(!imp.at_step);  // no stopped trial compared: the completed trials' final values
  std::string section = Section(RenderHtmlReport(r), "importance");
  CHECK(section.find("From the 6 completed trials' final lm_loss.") != std::string::npos);
  CHECK(section.find("Left out: 1 trial stopped early before step 25") != std::string::npos);
  CHECK(section.find("1 trial still running") != std::string::npos);
  CHECK(section.find("1 trial that failed") != std::string::npos);

  // Too few trials to say: what is left out is still counted.
  r.trials.erase(r.trials.begin() + 1, r.trials.begin() + 5);
  imp = ParamImportances(r);
  REQUIRE(!imp.why_none.empty());
  section = Section(RenderHtmlReport(r), "importance");
  CHECK(section.find("Not estimated: 2 completed trials with a value") != std::string::npos);
  CHECK(section.find("Left out: 1 trial stopped early before step 25") != std::string::npos);
}

TEST_CASE("Importance: the metric's and the parameters' names reach the HTML escaped", "[report]") {
  StudyReport r = PrunedLowLrReport();
  r.meta.objective_metric = "loss<script>";
  r.meta.param_names = {"lr&<b>", "batch\"x"};
  std::string section = Section(RenderHtmlReport(r), "importance");
  REQUIRE(!section.empty());
  CHECK(section.find("smoothed loss&lt;script&gt; at step 40") != std::string::npos);
  CHECK(section.find("lr&amp;&lt;b&gt;") != std::string::npos);
  CHECK(section.find("<script>") == std::string::npos);
  CHECK(section.find("<b>") == std::string::npos);
  CHECK(section.find("batch\"x") == std::string::npos);
}

TEST_CASE("Best so far against cumulative hours: monotone, every ended trial paid for", "[report]") {
  StudyReport r = HpoReport();
  auto points = BestSoFar(r);
  REQUIRE(points.size() == r.trials.size());
  double hours = 0, best = 1e9;
  for (const auto& p : points) {
    const TrialSummary& t = r.trials[p.trial];
    hours += *t.wall_s / 3600;  // one CPU per trial
    CHECK(p.hours == Approx(hours));
    if (t.state == "completed") best = std::min(best, *t.final_value);
    REQUIRE(p.best);
    CHECK(*p.best == best);
  }
  Analysis a = Analyze(r);
  CHECK(*points.back().best == *r.trials[*a.recommended].final_value);
  std::string section = Section(RenderHtmlReport(r), "best-so-far");
  CHECK(section.find("<svg") != std::string::npos);
  CHECK(section.find("The recommendation was found after") != std::string::npos);
}

TEST_CASE("Continuous parameters get a numeric axis, log where sampled so", "[report]") {
  StudyReport r = HpoReport();
  std::string params = Section(RenderHtmlReport(r), "parameters");
  // lr on a log axis: decade ticks, not one category per value ("0.00 0.00 0.01").
  CHECK(params.find("lr (log scale)") != std::string::npos);
  CHECK(params.find(">0.001</text>") != std::string::npos);
  CHECK(params.find(">0.0001</text>") != std::string::npos);
  CHECK(params.find(">0.00</text>") == std::string::npos);
  // A categorical parameter keeps its categories.
  CHECK(params.find(">adam</text>") != std::string::npos);
  // Not sampled on a log scale and spanning less than a factor of 20: a linear axis.
  for (auto& t : r.trials) t.param_values[0] = Sig3(0.01 + 0.001 * t.id);
  r.meta.param_log = {false, false, false};
  params = Section(RenderHtmlReport(r), "parameters");
  CHECK(params.find("lr (log scale)") == std::string::npos);
  CHECK(params.find(">lr</text>") != std::string::npos);
}

TEST_CASE("Pruned trials appear in the by-parameter charts at their stopping value, as rings", "[report]") {
  StudyReport r = HpoReport();
  int stopped = 0;
  for (const auto& t : r.trials) stopped += t.state != "completed";
  REQUIRE(stopped > 0);
  std::string params = Section(RenderHtmlReport(r), "parameters");
  // One final-value chart per parameter (no throughput charts at equal speed): each ring is a
  // stopped trial, and its tooltip names the step it stopped at.
  CHECK(Count(params, "fill=\"none\" stroke=") == 3 * static_cast<size_t>(stopped));
  CHECK(params.find("(pruned at step 100)") != std::string::npos);
}

TEST_CASE("Parallel coordinates: an axis per parameter and the objective, a line per trial", "[report]") {
  StudyReport r = HpoReport();
  std::string par = Section(RenderHtmlReport(r), "parallel");
  REQUIRE(!par.empty());
  CHECK(Count(par, "<path d=\"M") == r.trials.size());
  CHECK(Count(par, "stroke-dasharray") == 4);  // the pruned trials
  CHECK(par.find(">final lm_loss</text>") != std::string::npos);
  CHECK(par.find(">optimizer</text>") != std::string::npos);
  // Every line goes through 4 axes.
  std::regex four("<path d=\"M[0-9.]+ [0-9.]+L[0-9.]+ [0-9.]+L[0-9.]+ [0-9.]+L[0-9.]+ [0-9.]+\"");
  CHECK(static_cast<size_t>(std::distance(std::sregex_iterator(par.begin(), par.end(), four),
                                          std::sregex_iterator())) == r.trials.size());
}

TEST_CASE("A study that maximises its objective recommends the highest final value", "[report]") {
  StudyReport r = HpoReport(24, false);
  Analysis a = Analyze(r);
  REQUIRE(a.recommended);
  double best = -1e9;
  for (const auto& t : r.trials) {
    if (t.state == "completed") best = std::max(best, *t.final_value);
  }
  CHECK(*r.trials[*a.recommended].final_value == best);
  CHECK(*r.trials[*a.runner_up].final_value < best);
  auto points = BestSoFar(r);
  CHECK(*points.back().best == best);
  for (size_t k = 1; k < points.size(); ++k) CHECK(*points[k].best >= *points[k - 1].best);
  std::string html = RenderHtmlReport(r);
  CHECK(html.find("objective: maximise accuracy") != std::string::npos);
  CHECK(Section(html, "parallel").find("highest at the top") != std::string::npos);
  CHECK(r.meta.param_names[ParamImportances(r).params[0].param] == "lr");
}

TEST_CASE("The study kind follows the parameters: throughput knobs make a performance study", "[report]") {
  CHECK(IsThroughputKnob("micro_batch_size"));
  CHECK(IsThroughputKnob("tp"));
  CHECK(!IsThroughputKnob("lr"));
  CHECK(!IsThroughputKnob("hidden"));
}

// Issue 41: a study with repeats, as tpe would draw it: 8 configurations x 3 seeds. lr decides the
// loss; momentum cannot change it but was drawn together with lr (its value follows lr's rank);
// `sleep` (two values) halves the speed and nothing else. Configuration c's seed s: loss =
// f(lr) + noise(s); the single best trial is a lucky seed of configuration 1, while configuration
// 0 has the best mean.
StudyReport RepeatsReport(bool correlated = true) {
  StudyReport r;
  r.meta.study_name = "repeats";
  r.meta.objective_metric = "loss";
  r.meta.param_names = {"lr", "momentum", "seed", "sleep"};
  r.meta.param_log = {true, false, false, false};
  r.meta.cpus_per_task = 1;
  const int configs = 8, seeds = 3;
  const double momentum_of[] = {0.11, 0.35, 0.21, 0.5, 0.62, 0.74, 0.83, 0.95};  // drawn: rises with lr
  const double shuffled[] = {0.62, 0.95, 0.11, 0.83, 0.35, 0.21, 0.74, 0.5};     // drawn apart from lr
  for (int c = 0; c < configs; ++c) {
    for (int s = 0; s < seeds; ++s) {
      TrialSummary t;
      t.id = c * seeds + s + 1;
      t.key = "t-" + std::to_string(t.id);
      double lr = 0.001 * (c + 1);
      int sleep = c % 2 == 0 ? 0 : 10;
      t.param_values = {Sig3(lr), Sig3(correlated ? momentum_of[c] : shuffled[c]), ParamCell(s), ParamCell(sleep)};
      t.state = "completed";
      double noise = (s - 1) * 0.004;
      if (c == 1 && s == 2) noise = -0.02;  // the single best trial (0.29): a lucky seed; mean 0.302
      t.final_value = 0.30 + 0.01 * c + noise;
      t.final_spread = 0.001;
      t.iters_per_s = sleep ? 50.0 : 100.0;
      t.steps_to_target = 200 + 10 * c;
      t.curve = {{0, 0, 1.0}, {100, 1, 0.5}, {300, 3, *t.final_value}};
      r.trials.push_back(t);
    }
  }
  std::vector<TrialRow> rows;
  for (const TrialSummary& t : r.trials) {
    TrialRow row;
    row.trial_key = t.key;
    row.param_values = t.param_values;
    row.state = t.state;
    row.objective_value = t.final_value;
    row.iters_per_s = t.iters_per_s;
    rows.push_back(row);
  }
  r.configs = RankConfigurations(r.meta.param_names, rows, "seed", /*minimize=*/true);
  return r;
}

TEST_CASE("Importance over configurations: n is configurations, and correlated draws get a caveat",
          "[report][repeats]") {
  StudyReport r = RepeatsReport();
  Importances imp = ParamImportances(r);
  REQUIRE(imp.why_none.empty());
  CHECK(imp.configurations == 8);
  CHECK(imp.trials == 8);  // not the 24 trials: a configuration's seeds are one draw of its values
  for (const auto& p : imp.params) CHECK(r.meta.param_names[p.param] != "seed");
  REQUIRE(!imp.correlated.empty());
  CHECK(r.meta.param_names[imp.correlated[0].a] == "lr");
  CHECK(r.meta.param_names[imp.correlated[0].b] == "momentum");
  CHECK(imp.correlated[0].rho > 0.9);
  CHECK(SpearmanRho({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1));
  CHECK(SpearmanRho({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1));
  std::string section = Section(RenderHtmlReport(r), "importance");
  CHECK(section.find("Over the 8 configurations") != std::string::npos);
  CHECK(section.find("Caution: the sampler drew some parameters together") != std::string::npos);
  CHECK(section.find("lr and momentum (Spearman ρ = ") != std::string::npos);

  // Drawn apart, no caveat; the importance of lr is still there.
  StudyReport apart = RepeatsReport(/*correlated=*/false);
  imp = ParamImportances(apart);
  CHECK(imp.correlated.empty());
  CHECK(apart.meta.param_names[imp.params[0].param] == "lr");
  CHECK(Section(RenderHtmlReport(apart), "importance").find("Caution") == std::string::npos);
}

TEST_CASE("With repeats the recommendation, runner-up and baseline are configurations", "[report][repeats]") {
  StudyReport r = RepeatsReport();
  ClassifyBySpeed(r, StudyKind::kHyperparameter, "guess");
  // sleep halves the speed: a performance study by measurement, whatever the names.
  CHECK(r.meta.kind == StudyKind::kPerformance);
  CHECK(r.meta.kind_basis.find("2.00x") != std::string::npos);
  // The baseline names a trial: its configuration is compared (configuration 3, mean 0.33).
  r.baseline = 9;  // t-10: configuration 3, seed 0
  r.baseline_named = true;
  r.baseline_note = "named by the study: t-10";
  r.configs->baseline = GroupOfRow(*r.configs, 9);
  Analysis a = Analyze(r);
  REQUIRE(a.recommended_config);
  REQUIRE(a.runner_up_config);
  CHECK(r.configs->groups[*a.recommended_config].param_values[0] == "0.00100");  // best mean, not the lucky seed
  CHECK(*a.runner_up_config != *a.recommended_config);
  CHECK(r.configs->groups[*a.runner_up_config].param_values[0] == "0.00200");
  REQUIRE(a.recommended);
  CHECK(r.trials[*a.recommended].param_values[0].text == "0.00100");
  REQUIRE(a.baseline_config);
  CHECK(r.configs->groups[*a.baseline_config].param_values[0] == "0.00400");
  REQUIRE(a.versus_baseline);
  CHECK(a.versus_baseline->verdict == Separability::Verdict::kSeparable);
  // Configurations' speed: time to target of configuration 0 = 200 steps / 100 iter/s; the
  // baseline's 230 / 50.
  REQUIRE(a.decomposition);
  CHECK(a.decomposition->throughput == Approx(2.0));
  CHECK(a.decomposition->convergence == Approx(230.0 / 200.0));
  CHECK(a.decomposition->time_to_target == Approx((230.0 / 50) / (200.0 / 100)));

  std::string head = Section(RenderHtmlReport(r), "recommendation");
  INFO(head);
  // Leads with time to target, names configurations with n and the standard error.
  CHECK(head.find("<p class=\"rec\">Use <strong>lr=0.00100 momentum=0.110 sleep=0</strong>") != std::string::npos);
  CHECK(head.find("faster to the target than the baseline (2.0 s vs 4.6 s): the best mean final loss") !=
        std::string::npos);
  CHECK(head.find("faster to the target than the baseline") < head.find("throughput"));
  CHECK(head.find("(n = 3)") != std::string::npos);
  CHECK(head.find("seed=") == std::string::npos);
  CHECK(head.find("Baseline: <strong>lr=0.00400 momentum=0.500 sleep=10</strong>") != std::string::npos);
  CHECK(head.find("Welch's t test") != std::string::npos);
  CHECK(head.find("A performance study (the speed differs 2.00x") != std::string::npos);

  // As a hyperparameter study (every configuration at one speed): the cards compare configurations.
  for (auto& t : r.trials) t.iters_per_s = 100.0;
  for (auto& g : r.configs->groups) g.iters_per_s = 100.0;
  ClassifyBySpeed(r, StudyKind::kPerformance, "guess");
  CHECK(r.meta.kind == StudyKind::kHyperparameter);
  head = Section(RenderHtmlReport(r), "recommendation");
  CHECK(head.find("the best mean final loss among 8 configurations (24 completed trials)") != std::string::npos);
  CHECK(head.find("ahead of the runner-up configuration lr=0.00200 momentum=0.350 sleep=10") != std::string::npos);
  CHECK(head.find("better than the baseline configuration lr=0.00400") != std::string::npos);
  CHECK(head.find("The best two are") != std::string::npos);
}

TEST_CASE("With repeats the throughput chart has one bar per configuration and a true count", "[report][repeats]") {
  StudyReport r = RepeatsReport();
  ClassifyBySpeed(r, StudyKind::kHyperparameter, "guess");
  std::string section = Section(RenderHtmlReport(r), "throughput");
  CHECK(Count(section, "class=\"bar-label\"") == 8);
  CHECK(section.find("8 configurations (24 trials) logged iteration times; all are drawn") != std::string::npos);
  HtmlOptions few;
  few.throughput_bars = 5;
  section = Section(RenderHtmlReport(r, few), "throughput");
  CHECK(Count(section, "class=\"bar-label\"") == 5);
  CHECK(section.find("8 configurations (24 trials) logged iteration times; the fastest 5 are drawn") !=
        std::string::npos);
}

TEST_CASE("compare reads each study's best configuration over its seeds", "[report][repeats]") {
  Comparison c;
  for (double speed : {1.0, 2.0}) {
    ComparedStudy s;
    s.report = RepeatsReport();
    s.report.meta.study_name = speed == 1.0 ? "slow" : "fast";
    for (auto& t : s.report.trials) *t.iters_per_s *= speed;
    for (auto& g : s.report.configs->groups) *g.iters_per_s *= speed;
    s.analysis = Analyze(s.report);
    c.studies.push_back(std::move(s));
  }
  std::string csv = RenderCompareCsv(c);
  INFO(csv);
  // The best configuration's mean (0.30 over 3 seeds), not its single best seed, and no seed in
  // its configuration; twice the throughput at the same steps: x2 to the target.
  CHECK(csv.find(",lr=0.00100 momentum=0.110 sleep=0,0.3,") != std::string::npos);
  CHECK(csv.find("seed=") == std::string::npos);
  StudyBest fast = BestOf(c.studies[1], c.studies[0]);
  REQUIRE(fast.config);
  REQUIRE(fast.vs_first);
  CHECK(fast.vs_first->throughput == Approx(2.0));
  CHECK(fast.vs_first->time_to_target == Approx(2.0));
  std::string html = RenderCompareHtml(c);
  CHECK(html.find("<td><span class=\"key\">3 seeds</span></td>") != std::string::npos);
}

}  // namespace
}  // namespace sweep::reports
