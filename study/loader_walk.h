// The study file's loader: a class that walks the TOML tree into a Study, every error naming file,
// line and key. Its methods live in loader.cc (the study, [cluster], [job], [report], [notify], [retry])
// and loader_space.cc ([search] and [space]).
// Internal to study/ (scripts/include-loops.py checks that no other folder includes it).
// Module study/ (namespace sweep::study): the study file; uses base/ only.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>
#include <toml++/toml.h>

#include "base/status.h"
#include "study/space.h"
#include "study/study.h"
#include "study/toml_table.h"

namespace sweep::study {

// More trials than this is a typo, not a study: it would exhaust memory before reaching the queue.
inline constexpr int64_t kMaxTrials = 1'000'000;

// Reads one study file; every error is "FILE:LINE: key 'a.b': what is wrong".
class Loader {
 public:
  Loader(std::string path) : path_(std::move(path)) {}

  Status Error(const toml::node* node, std::string_view key, std::string_view what) const {
    int line = node ? static_cast<int>(node->source().begin.line) : 0;
    return Status::InvalidArgument(fmt::format("{}:{}: key '{}': {}", path_, line, key, what));
  }
  Status ErrorAt(int line, std::string_view key, std::string_view what) const {
    return Status::InvalidArgument(fmt::format("{}:{}: key '{}': {}", path_, line, key, what));
  }

  // Unknown keys are errors, with the closest allowed key suggested (toml_table.h).
  Status CheckKeys(const toml::table& table, std::string_view prefix, const std::vector<std::string_view>& allowed) {
    return TableReader(table, std::string(prefix), path_).CheckKeys(allowed, /*list_known=*/true);
  }

  // The typed reads are the shared reader's (toml_table.h), for the table `t` named `prefix`.
  Result<const toml::table*> Table(const toml::table& parent, std::string_view key, bool required) {
    return TableReader(parent, "", path_).Table(key, required);
  }

  Status String(const toml::table& t, std::string_view prefix, std::string_view key, std::string* out, bool required) {
    return TableReader(t, std::string(prefix), path_).String(key, out, required);
  }

  Status Int(const toml::table& t, std::string_view prefix, std::string_view key, int* out, int lo, int hi) {
    return TableReader(t, std::string(prefix), path_).Int(key, lo, hi, out);
  }

  Status Bool(const toml::table& t, std::string_view prefix, std::string_view key, bool* out) {
    return TableReader(t, std::string(prefix), path_).Bool(key, out);
  }

  Status Number(const toml::table& t, std::string_view prefix, std::string_view key, double* out, double lo) {
    return TableReader(t, std::string(prefix), path_).NumberAtLeast(key, lo, out);
  }

  // Local paths in a study are relative to the study file's directory; "~/" is the home dir.
  std::string Resolve(const std::string& dir, const std::string& p) const;

  // The database is a regular file (or none yet) in a folder: SQLite writes DATABASE-wal,
  // DATABASE.lock and the rest beside it, so /dev/full would put them in /dev, and a link would
  // have them written wherever it points. Whose folder it is, the writer checks (store/sqlite_store.cc).
  Status CheckDatabasePath(const toml::node* node, const std::string& database) const;

  Result<Study> Load(const std::string& text);

  Status LoadCluster(const toml::table& root, Study& s);

  Status LoadSearch(const toml::table& root, Study& s);

  // A grid study's phase 1: its top configurations, crossed with this study's [space].
  Status LoadSeedFrom(const toml::node& n, const toml::table& sf_table, Study& s);

  // The values of a [space] list. A string outside the safe alphabet (base/params.h) is refused
  // unless the parameter is declared `text = true`: such a value could become code wherever a
  // template put it, so the study must say it is text, and the template check then keeps it out of
  // every place but a variable's value or a comment.
  Status LoadChoices(const toml::array& arr, const toml::node& node, const std::string& full, ParamSpec& p);

  Status LoadSpace(const toml::table& root, Study& s);

  Status LoadReport(const toml::table& root, Study& s);

  Status LoadNotify(const toml::table& root, Study& s);

  Status LoadRetry(const toml::table& root, Study& s);

  Status LoadJob(const toml::table& root, Study& s);

 private:
  std::string path_;
};

}  // namespace sweep::study
