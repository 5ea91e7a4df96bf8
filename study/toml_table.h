// The one reader of TOML tables for the study file and its [stopping] table: typed keys with
// ranges, unknown keys refused with the closest known key suggested, and every error in the
// form "PATH:LINE: key 'a.b': what". Uses base/ and toml++ only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "base/status.h"
#include "base/text.h"

namespace sweep::study {

int LineOf(const toml::node& node);

// Reads one table (`prefix` names it in errors: "stopping.median"); the reader refers to
// `table` and `path`, which must outlive it.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string prefix, const std::string& path)
      : table_(table), prefix_(std::move(prefix)), path_(path) {}

  Status Error(const toml::node& node, std::string_view key, std::string_view what) const {
    return Status::InvalidArgument(fmt::format("{}:{}: key '{}': {}", path_, LineOf(node), Full(key), what));
  }
  Status Missing(std::string_view key, std::string_view why) const {
    return Status::InvalidArgument(fmt::format("{}:{}: missing key '{}' ({})", path_, LineOf(table_), Full(key), why));
  }
  // The key's full name: "prefix.key", or "key" in the file's top level (empty prefix).
  std::string Full(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : fmt::format("{}.{}", prefix_, key);
  }

  // Unknown keys are errors, with the closest allowed key suggested; with `list_known`, a short
  // list of allowed keys (at most 12) is named when none is close.
  Status CheckKeys(const std::vector<std::string_view>& allowed, bool list_known = false) const {
    for (const auto& [k, node] : table_) {
      if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end()) continue;
      std::string hint = DidYouMean(k.str(), allowed);
      if (hint.empty() && list_known && allowed.size() <= 12) {
        hint = fmt::format(" (known keys: {})", fmt::join(allowed, ", "));
      }
      return Status::InvalidArgument(
          fmt::format("{}:{}: unknown key '{}'{}", path_, k.source().begin.line, Full(k.str()), hint));
    }
    return Status::OK();
  }

  const toml::node* Get(std::string_view key) const { return table_.get(key); }

  Status Number(std::string_view key, double lo, double hi, double* out) const {
    const toml::node* n = Get(key);
    if (!n) return Status::OK();
    if (!n->is_number()) return Error(*n, key, "must be a number");
    double v = n->value<double>().value_or(0);
    if (!(v >= lo && v <= hi)) {
      return Error(*n, key,
                   hi == std::numeric_limits<double>::infinity() ? fmt::format("must be at least {}", lo)
                                                                 : fmt::format("must be between {} and {}", lo, hi));
    }
    *out = v;
    return Status::OK();
  }
  Status Number(std::string_view key, double lo, double hi, std::optional<double>* out) const {
    if (!Get(key)) return Status::OK();
    double v = 0;
    SWEEP_RETURN_IF_ERROR(Number(key, lo, hi, &v));
    *out = v;
    return Status::OK();
  }
  // A time or margin that must be positive when given (0 would silently mean "no rule").
  Status Positive(std::string_view key, double* out) const {
    const toml::node* n = Get(key);
    if (!n) return Status::OK();
    SWEEP_RETURN_IF_ERROR(Number(key, 0, std::numeric_limits<double>::infinity(), out));
    if (*out <= 0) return Error(*n, key, "must be greater than 0");
    return Status::OK();
  }
  Status Int(std::string_view key, int64_t lo, int64_t hi, int64_t* out) const {
    const toml::node* n = Get(key);
    if (!n) return Status::OK();
    if (!n->is_integer()) return Error(*n, key, "must be an integer");
    int64_t v = n->as_integer()->get();
    if (v < lo || v > hi) return Error(*n, key, fmt::format("must be between {} and {}", lo, hi));
    *out = v;
    return Status::OK();
  }
  Status Int(std::string_view key, int lo, int hi, int* out) const {
    int64_t v = *out;
    SWEEP_RETURN_IF_ERROR(Int(key, int64_t{lo}, int64_t{hi}, &v));
    *out = static_cast<int>(v);
    return Status::OK();
  }
  // A sub-table: nullptr when absent and not `required` ("PATH: missing table [a.b]" if it is).
  Result<const toml::table*> Table(std::string_view key, bool required) const {
    const toml::node* n = Get(key);
    if (!n) {
      if (required) return Status::InvalidArgument(fmt::format("{}: missing table [{}]", path_, Full(key)));
      return static_cast<const toml::table*>(nullptr);
    }
    if (!n->is_table()) return Error(*n, key, "must be a table");
    return n->as_table();
  }
  Status String(std::string_view key, std::string* out, bool required = false) const {
    const toml::node* n = Get(key);
    if (!n) {
      return required ? Status::InvalidArgument(fmt::format("{}: missing key '{}'", path_, Full(key))) : Status::OK();
    }
    auto v = n->value<std::string>();
    if (!n->is_string() || !v) return Error(*n, key, "must be a string");
    *out = *v;
    return Status::OK();
  }
  // The study file's numbers: a lower bound only, and (unlike Number) a NaN passes, as the
  // loader has always let it.
  Status NumberAtLeast(std::string_view key, double lo, double* out) const {
    const toml::node* n = Get(key);
    if (!n) return Status::OK();
    if (!n->is_number()) return Error(*n, key, "must be a number");
    double v = n->value<double>().value_or(0);
    if (v < lo) return Error(*n, key, fmt::format("must be at least {}", lo));
    *out = v;
    return Status::OK();
  }
  Status Bool(std::string_view key, bool* out) const {
    const toml::node* n = Get(key);
    if (!n) return Status::OK();
    if (!n->is_boolean()) return Error(*n, key, "must be true or false");
    *out = n->as_boolean()->get();
    return Status::OK();
  }
  Status Choice(std::string_view key, const std::vector<std::string_view>& choices, std::string* out) const {
    const toml::node* n = Get(key);
    if (!n) return Status::OK();
    auto v = n->value<std::string>();
    if (!n->is_string() || !v) return Error(*n, key, "must be a string");
    if (std::find(choices.begin(), choices.end(), *v) == choices.end()) {
      std::string list;
      for (std::string_view c : choices) list += fmt::format("{}'{}'", list.empty() ? "" : ", ", c);
      return Error(*n, key, fmt::format("'{}' is not one of {}{}", *v, list, DidYouMean(*v, choices)));
    }
    *out = *v;
    return Status::OK();
  }

 private:
  const toml::table& table_;
  std::string prefix_;
  const std::string& path_;
};

}  // namespace sweep::study
