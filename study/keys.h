// The keys a study file may hold, one list per table: the loader refuses any other key (with the
// closest one suggested), and docs/study-file.md documents every one (tests/docs_test.cc checks both ways).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sweep::study {

// The keys of one table of the study file. `table` names the list ("" is the file's top level,
// "cluster", "stopping.median"; "space.range" and "space.values" are a parameter's two forms);
// a table not listed has no fixed keys and returns an empty list.
const std::vector<std::string_view>& AllowedKeys(std::string_view table);

// Every key the study file may hold, dotted as the reference writes it: "cluster.host",
// "stopping.median.grace_s", and "*" where the study chooses the name ("space.*", "space.*.min",
// "job.vars.*", "study.metric_regex.*", "search.enqueue.*").
std::vector<std::string> KnownKeys();

}  // namespace sweep::study
