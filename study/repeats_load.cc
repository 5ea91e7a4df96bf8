// Loading [search] repeats, seed_var and enqueue; see repeats_load.h.
#include "study/repeats_load.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/params_text.h"
#include "base/text.h"
#include "study/names.h"
#include "study/repeats.h"
#include "study/space.h"
#include "study/template_vars.h"
#include "study/toml_table.h"

namespace sweep::study {
namespace {

constexpr int kMaxRepeats = 1000;

// The value of `p` that `node` gives in an enqueued configuration, typed as the space has it: a
// list's own value (so the trial key is the grid's), or a number within the range.
Result<ParamValue> EnqueuedValue(const ParamSpec& p, const toml::node& node, const TableReader& reader) {
  if (!p.choices.empty()) {
    std::vector<std::string> shown;
    for (const ParamValue& c : p.choices) {
      bool same = std::visit(
          [&](const auto& v) -> bool {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>) return node.is_string() && node.value<std::string>() == v;
            else if constexpr (std::is_same_v<T, bool>) return node.is_boolean() && node.value<bool>() == v;
            else return node.is_number() && node.value<double>() == static_cast<double>(v);
          },
          c);
      if (same) return c;
      shown.push_back(ParamToString(c));
    }
    std::string given, raw;
    if (auto str = node.value<std::string>(); node.is_string() && str) raw = *str, given = "\"" + *str + "\"";
    else if (node.is_number()) given = fmt::format("{}", node.value<double>().value_or(0));
    else if (node.is_boolean()) given = node.value<bool>().value_or(false) ? "true" : "false";
    else given = "this value";
    std::vector<std::string_view> views(shown.begin(), shown.end());
    return reader.Error(node, p.name,
                        fmt::format("{} is not one of space.{}'s values ({}){}", given, p.name, fmt::join(shown, ", "),
                                    DidYouMean(raw, views)));
  }
  if (!node.is_number()) return reader.Error(node, p.name, fmt::format("space.{} is a range: give a number", p.name));
  double v = node.value<double>().value_or(0);
  if (!(v >= *p.min && v <= *p.max)) {
    return reader.Error(node, p.name,
                        fmt::format("{} is outside space.{}'s range [{}, {}]", v, p.name, *p.min, *p.max));
  }
  if (p.integer) {
    if (v != std::floor(v)) {
      return reader.Error(node, p.name, fmt::format("space.{} is an integer range: {} is not an integer", p.name, v));
    }
    return ParamValue(static_cast<int64_t>(v));
  }
  return ParamValue(v);
}

Status LoadEnqueue(const toml::node& node, const std::string& path, Study& s) {
  const toml::array* list = node.as_array();
  auto where = [&](const toml::node& n) { return fmt::format("{}:{}: key 'search.enqueue'", path, LineOf(n)); };
  if (!list) {
    return Status::InvalidArgument(where(node) +
                                   ": must be tables of parameter values ([[search.enqueue]] lr = 0.01 ...)");
  }
  if (s.seed_from) {
    return Status::InvalidArgument(where(node) +
                                   ": a phase 2 study takes its first configurations from phase 1 (seed_from)");
  }
  auto checker = ConstraintChecker::Make(s);
  if (!checker.ok()) return checker.status();
  std::vector<std::pair<std::string, int>> seen;  // key, line
  std::vector<std::string_view> names;
  for (const ParamSpec& p : s.space) names.push_back(p.name);
  for (const toml::node& entry : *list) {
    const toml::table* t = entry.as_table();
    if (!t) return Status::InvalidArgument(where(entry) + ": each entry must be a table of parameter values");
    TableReader reader(*t, "search.enqueue", path);
    SWEEP_RETURN_IF_ERROR(reader.CheckKeys(names, /*list_known=*/true));
    Params params;
    for (const ParamSpec& p : s.space) {
      const toml::node* v = t->get(p.name);
      if (!v) {
        return Status::InvalidArgument(
            fmt::format("{}: missing key '{}': an enqueued configuration gives a value for every [space] parameter",
                        where(entry), p.name));
      }
      auto value = EnqueuedValue(p, *v, reader);
      if (!value.ok()) return value.status();
      params.emplace_back(p.name, std::move(*value));
    }
    auto spec = checker->Check(params);
    if (!spec.ok()) return spec.status();
    if (!spec->dropped_reason.empty()) {
      return Status::InvalidArgument(
          fmt::format("{}: {} is dropped: {}", where(entry), spec->params_json, spec->dropped_reason));
    }
    for (const auto& [key, line] : seen) {
      if (key == spec->key) {
        return Status::InvalidArgument(
            fmt::format("{}: the same configuration as line {}; give each once", where(entry), line));
      }
    }
    seen.emplace_back(spec->key, LineOf(entry));
    s.enqueue.push_back(std::move(params));
  }
  return Status::OK();
}

}  // namespace

Status LoadRepeatsAndEnqueue(const toml::table& search, const std::string& path, Study& s) {
  TableReader reader(search, "search", path);
  SWEEP_RETURN_IF_ERROR(reader.Int("repeats", 1, kMaxRepeats, &s.repeats));
  const toml::node* var_node = search.get("seed_var");
  const toml::node* at = search.get("repeats") ? search.get("repeats") : var_node;
  if (at) s.repeats_line = LineOf(*at);
  if (var_node) {
    auto name = var_node->value<std::string>();
    if (!var_node->is_string() || !name || !IsIdentifier(*name)) {
      return reader.Error(*var_node, "seed_var", "must be a template variable name (letters, digits, '_')");
    }
    s.seed_var = *name;
  } else if (s.repeats > 1) {
    s.seed_var = "seed";
  }
  if (!s.seed_var.empty()) {
    // The seed is one more template variable: it may not shadow another, whatever the order.
    std::string clash;
    for (const ParamSpec& p : s.space) {
      if (p.name == s.seed_var) clash = fmt::format("a [space] parameter (line {})", p.line);
    }
    if (s.job.vars.count(s.seed_var)) clash = "a [job.vars] variable";
    if (IsBuiltinTemplateVar(s.seed_var)) clash = "a built-in template variable";
    if (!clash.empty()) {
      return reader.Error(*at, var_node ? "seed_var" : "repeats",
                          fmt::format("the seed variable '{}' is also {}; name the seed otherwise (seed_var = \"rng\")",
                                      s.seed_var, clash));
    }
  }
  if (const toml::node* n = search.get("enqueue")) SWEEP_RETURN_IF_ERROR(LoadEnqueue(*n, path, s));
  return Status::OK();
}

}  // namespace sweep::study
