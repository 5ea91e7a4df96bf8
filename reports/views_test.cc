// Tests of issue 17's report views on plain data: the headline by study kind (performance or
// hyperparameter), parameter importance, best so far against cost, numeric and log axes for
// continuous parameters, stopped trials in the by-parameter charts, parallel coordinates, and a
// study that maximises its objective.
#include <catch2/catch.hpp>
#include <cmath>
#include <regex>
#include <string>

#include "reports/csv.h"
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
  REQUIRE(imp.trials == 25);  // the pruned ones are left out
  REQUIRE(imp.params.size() == 3);
  CHECK(r.meta.param_names[imp.params[0].param] == "lr");
  CHECK(imp.params[0].epsilon2 > 0.5);
  CHECK(imp.params[0].groups == 5);  // 25 distinct values in 5 groups by rank
  double sum = 0;
  for (const auto& p : imp.params) sum += p.share;
  CHECK(sum == Approx(1));
  for (const auto& p : imp.params) {
    if (r.meta.param_names[p.param] == "seed") CHECK(p.epsilon2 < 0.05);
  }
  // Made to depend on the optimizer alone, the optimizer comes first.
  for (auto& t : r.trials) t.final_value = t.param_values[1].text == "adam" ? 1.0 + 0.001 * t.id : 2.0;
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
  // importance.csv leaves its numbers empty rather than 0.
  CHECK(RenderImportanceCsv(r).find("optimizer,false,6,,,6\n") != std::string::npos);

  // The pruned trials are left out, and the report says how many.
  StudyReport with_pruned = HpoReport(30);
  imp = ParamImportances(with_pruned);
  CHECK(imp.stopped_left_out == 5);
  CHECK(Section(RenderHtmlReport(with_pruned), "importance")
            .find("5 trials stopped early (pruned or cancelled) are "
                  "left out") != std::string::npos);
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

}  // namespace
}  // namespace sweep::reports
