// The study file's [search] and [space]: the sampler, its seeds and enqueued configurations, and each
// parameter's values or range; see loader_walk.h.
#include "study/loader_walk.h"
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_set>
#include <toml++/toml.h>
#include "base/params_text.h"
#include "base/text.h"
#include "base/trial_state.h"
#include "study/expr.h"
#include "study/keys.h"
#include "study/names.h"
#include "study/repeats_load.h"
#include "study/stopping_config.h"
#include "study/template_vars.h"
#include "study/toml_table.h"

namespace sweep::study {
namespace fs = std::filesystem;

Status Loader::LoadSearch(const toml::table& root, Study& s) {
  auto se = Table(root, "search", false);
  if (!se.ok()) return se.status();
  if (*se) {
    const toml::table& t = **se;
    SWEEP_RETURN_IF_ERROR(CheckKeys(t, "search", AllowedKeys("search")));
    SWEEP_RETURN_IF_ERROR(String(t, "search", "sampler", &s.sampler, false));
    if (s.sampler != "grid" && s.sampler != "random" && s.sampler != "tpe") {
      return Error(t.get("sampler"), "search.sampler", "must be \"grid\", \"random\" or \"tpe\"");
    }
    SWEEP_RETURN_IF_ERROR(Int(t, "search", "trials", &s.trials, 1, static_cast<int>(kMaxTrials)));
    int seed = 1;
    SWEEP_RETURN_IF_ERROR(Int(t, "search", "seed", &seed, 0, INT32_MAX));
    s.seed = static_cast<uint64_t>(seed);
    if (const toml::node* n = t.get("constraints")) {
      const toml::array* arr = n->as_array();
      if (!arr) return Error(n, "search.constraints", "must be a list of strings");
      for (const toml::node& e : *arr) {
        auto v = e.value<std::string>();
        if (!e.is_string() || !v) return Error(&e, "search.constraints", "each constraint must be a string");
        s.constraints.push_back({*v, static_cast<int>(e.source().begin.line)});
      }
    }
    if (const toml::node* n = t.get("seed_from")) {
      const toml::table* sf = n->as_table();
      if (!sf)
        return Error(n, "search.seed_from",
                     "must be a table: { study = \"phase1.toml\", top = 3, by = \"iters_per_s\" }");
      if (s.sampler == "tpe") {
        // Warm start: the other study's trials are prior knowledge, not seeds to cross.
        for (const char* key : {"top", "by"}) {
          if (sf->get(key)) {
            return Error(sf->get(key), fmt::format("search.seed_from.{}", key),
                         "picks phase 1's winners for a grid study; with sampler = \"tpe\" every ended trial of "
                         "the other study informs the sampler (seed_from = { study = \"old.toml\" })");
          }
        }
        SWEEP_RETURN_IF_ERROR(CheckKeys(*sf, "search.seed_from", {"study"}));
        Study::WarmStart warm;
        warm.line = static_cast<int>(n->source().begin.line);
        SWEEP_RETURN_IF_ERROR(String(*sf, "search.seed_from", "study", &warm.study_path, true));
        warm.study_path = Resolve(s.dir, warm.study_path);
        s.warm_start = warm;
      } else {
        SWEEP_RETURN_IF_ERROR(LoadSeedFrom(*n, *sf, s));
      }
    }
    if ((s.sampler == "random" || s.sampler == "tpe") && s.trials == 0) {
      return Error(&t, "search.trials", fmt::format("the {} sampler needs a trial budget (trials = N)", s.sampler));
    }
    if (s.sampler == "grid" && t.get("trials")) {
      return Error(t.get("trials"), "search.trials",
                   "is the random sampler's budget; the grid runs every combination (sampler = \"random\" to sample)");
    }
  }
  return LoadSpace(root, s);
}

Status Loader::LoadSeedFrom(const toml::node& n, const toml::table& sf_table, Study& s) {
  const toml::table* sf = &sf_table;
  SWEEP_RETURN_IF_ERROR(CheckKeys(*sf, "search.seed_from", AllowedKeys("search.seed_from")));
  Study::SeedFrom seed;
  seed.line = static_cast<int>(n.source().begin.line);
  SWEEP_RETURN_IF_ERROR(String(*sf, "search.seed_from", "study", &seed.study_path, true));
  seed.study_path = Resolve(s.dir, seed.study_path);
  SWEEP_RETURN_IF_ERROR(Int(*sf, "search.seed_from", "top", &seed.top, 1, 10000));
  SWEEP_RETURN_IF_ERROR(String(*sf, "search.seed_from", "by", &seed.by, false));
  if (seed.by != "iters_per_s" && seed.by != "final" && seed.by != "time_to_target") {
    return Error(sf->get("by"), "search.seed_from.by", "must be \"iters_per_s\", \"final\" or \"time_to_target\"");
  }
  if (s.sampler != "grid") return Error(&n, "search.seed_from", "needs the grid or tpe sampler");
  s.seed_from = seed;
  return Status::OK();
}

Status Loader::LoadChoices(const toml::array& arr, const toml::node& node, const std::string& full, ParamSpec& p) {
  if (arr.empty()) return Error(&node, full, "the list of values is empty");
  // The texts seen so far: the duplicate check is a lookup, not a scan (a scan made loading
  // quadratic in the list's length: 50k values took 16 s).
  std::unordered_set<std::string> seen;
  seen.reserve(arr.size());
  for (const toml::node& e : arr) {
    if (auto i = e.as_integer()) p.choices.emplace_back(i->get());
    else if (auto d = e.as_floating_point()) p.choices.emplace_back(d->get());
    else if (auto str = e.as_string()) p.choices.emplace_back(str->get());
    else if (auto b = e.as_boolean()) p.choices.emplace_back(b->get());
    else return Error(&e, full, "values must be integers, floats, strings or booleans");
    // A list that mixes kinds is a typo ([16, "32"]): the two would never compare equal.
    auto kind = [](const toml::node& n) { return n.is_number() ? 0 : n.is_string() ? 1 : 2; };
    if (kind(e) != kind(*arr.begin())) {
      return Error(&e, full, "mixes numbers, strings and booleans in one list; write every value alike");
    }
    // A value twice ([8, 8], [0.01, 1e-2]) is one trial key (keys hash the value's kind, checked
    // alike above, and its ParamToString): a grid would count it twice in `run` and list it twice
    // in `plan`, while the store keeps one trial.
    // A declared path is normalised before anything sees it: trial keys, the template, `plan`.
    if (auto* str = std::get_if<std::string>(&p.choices.back()); p.path && str) {
      *str = fs::path(*str).lexically_normal().string();
    }
    std::string text = ParamToString(p.choices.back());
    if (!seen.insert(text).second) {
      return Error(&e, full, fmt::format("the value {} is already in the list; give each value once", text));
    }
    if (!p.text && !IsSafeValue(text)) {
      return Error(&e, full, UnsafeValueMessage(text, p.name, "{ values = [...], text = true }"));
    }
    if (std::string problem = ValueShapeProblem(text, p.option, p.path); !problem.empty()) {
      return Error(&e, full, ValueShapeMessage(text, p.name, problem, "{{ values = [...], {} }}"));
    }
  }
  for (auto [flag, on] : {std::pair{"text", p.text}, std::pair{"option", p.option}, std::pair{"path", p.path}}) {
    if (on && !std::holds_alternative<std::string>(p.choices.front())) {
      return Error(&node, full + "." + flag, "is for string values; numbers and booleans are always carried safely");
    }
  }
  return Status::OK();
}

Status Loader::LoadSpace(const toml::table& root, Study& s) {
  auto sp = Table(root, "space", true);
  if (!sp.ok()) return sp.status();
  for (const auto& [k, node] : **sp) {
    ParamSpec p;
    p.name = k.str();
    p.line = static_cast<int>(k.source().begin.line);
    std::string full = "space." + p.name;
    if (!IsIdentifier(p.name))
      return ErrorAt(p.line, full, "parameter names must be identifiers (letters, digits, '_')");
    if (IsBuiltinTemplateVar(p.name)) {
      return ErrorAt(p.line, full, "this name is reserved for a built-in template variable");
    }
    // A list, or `{ values = [...], text = true }` for strings outside the safe alphabet.
    const toml::array* arr = node.as_array();
    const toml::node* list_node = &node;
    if (const toml::table* form = node.as_table(); form && form->get("values")) {
      SWEEP_RETURN_IF_ERROR(CheckKeys(*form, full, AllowedKeys("space.values")));
      list_node = form->get("values");
      arr = list_node->as_array();
      if (!arr) return Error(list_node, full + ".values", "must be a list of values");
      for (auto [flag, out] :
           {std::pair{"text", &p.text}, std::pair{"option", &p.option}, std::pair{"path", &p.path}}) {
        if (const toml::node* t = form->get(flag)) {
          if (!t->is_boolean()) return Error(t, full + "." + flag, "must be true or false");
          *out = t->value<bool>().value_or(false);
        }
      }
    }
    if (arr) {
      SWEEP_RETURN_IF_ERROR(LoadChoices(*arr, *list_node, full, p));
    } else if (const toml::table* range = node.as_table()) {
      SWEEP_RETURN_IF_ERROR(CheckKeys(*range, full, AllowedKeys("space.range")));
      double lo = 0, hi = 0;
      if (!range->get("min") || !range->get("max")) return Error(&node, full, "a range needs min and max");
      SWEEP_RETURN_IF_ERROR(Number(*range, full, "min", &lo, -1e300));
      SWEEP_RETURN_IF_ERROR(Number(*range, full, "max", &hi, -1e300));
      if (!(lo < hi)) return Error(&node, full, "min must be less than max");
      p.min = lo;
      p.max = hi;
      // log and int are booleans: `log = "yes"` would have sampled uniformly without a word.
      for (const char* flag : {"log", "int"}) {
        const toml::node* f = range->get(flag);
        if (f && !f->is_boolean()) return Error(f, full + "." + flag, "must be true or false");
      }
      p.log = range->get("log") && range->get("log")->value<bool>().value_or(false);
      p.integer = range->get("int") && range->get("int")->value<bool>().value_or(false);
      if (p.log && lo <= 0) return Error(&node, full, "a log range needs min > 0");
      if (s.sampler == "grid") {
        return Error(
            &node, full,
            "a range needs the random sampler or tpe ([search] sampler = \"random\" or \"tpe\"); grid takes lists");
      }
    } else {
      return Error(&node, full,
                   "must be a list of values, a range { min = .., max = .. }, or { values = [...], text = true }");
    }
    s.space.push_back(std::move(p));
  }
  if (s.space.empty()) return Status::InvalidArgument(fmt::format("{}: [space] has no parameters", path_));
  if (s.sampler == "grid") {
    double size = 1;
    for (const auto& p : s.space) size *= static_cast<double>(p.choices.size());
    if (size > kMaxTrials) {
      return Status::InvalidArgument(fmt::format(
          "{}: [space] is a grid of {:.3g} configurations, more than {}; use the random sampler with a trial budget",
          path_, size, kMaxTrials));
    }
  }

  std::set<std::string> names;
  for (const auto& p : s.space) names.insert(p.name);
  for (const auto& n : BuiltinExprVars()) names.insert(n);
  for (const auto& c : s.constraints) {
    auto e = Expr::Parse(c.expr);
    if (!e.ok()) return ErrorAt(c.line, "search.constraints", fmt::format("'{}': {}", c.expr, e.status().message()));
    for (const auto& v : e->Variables()) {
      if (!names.count(v)) {
        return ErrorAt(c.line, "search.constraints",
                       fmt::format("'{}' uses '{}', which is not a parameter", c.expr, v));
      }
    }
    // opt != "adamw" over ["sgd", "adam"] is always true: a misspelt value drops nothing, silently. A
    // warning, not an error: a constraint shared by studies may name a value this space leaves out.
    for (const auto& [name, text] : e->StringEqualities()) {
      // (C++17 lambdas cannot capture a structured binding: clang refuses, as the fuzz build showed.)
      auto p = std::find_if(s.space.begin(), s.space.end(),
                            [&, &param = name](const ParamSpec& q) { return q.name == param; });
      if (p == s.space.end() || p->choices.empty() || !std::holds_alternative<std::string>(p->choices.front())) {
        continue;  // a number or a range: comparing it with a string is a type error at evaluation
      }
      std::vector<std::string_view> values;
      for (const auto& v : p->choices) values.push_back(std::get<std::string>(v));
      if (std::find(values.begin(), values.end(), text) == values.end()) {
        s.warnings.push_back(fmt::format(
            "{}:{}: key 'search.constraints': '{}' compares '{}' with \"{}\", which is not one of its values "
            "({}){}; the comparison is the same for every trial",
            path_, c.line, c.expr, name, text, fmt::join(values, ", "), DidYouMean(text, values)));
      }
    }
  }
  return Status::OK();
}

}  // namespace sweep::study
