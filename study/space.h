// Search space expansion: the study's parameters become trials, each with a stable key
// derived from its values (so a rerun maps to the same trials), and constraints drop
// configurations before they cost queue time, recording which constraint dropped them.
// Module study/: the study file; uses base/ only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/params.h"
#include "base/status.h"
#include "study/expr.h"
#include "study/study.h"
#include "study/trial_key.h"  // TrialKey, for the space's users

namespace sweep::study {

// Grid: the cartesian product, last parameter varying fastest. Random: `trials` distinct
// draws from a generator seeded by the study's seed (same study file, same trials). Tpe: none
// (the run loop proposes them as results come in). Enqueued configurations come first (a random
// budget counts them), and each configuration is `repeats` trials, seed by seed (repeats.h).
// Errors only for constraints that cannot be evaluated (e.g. comparing a string to a number).
Result<std::vector<TrialSpec>> ExpandSpace(const Study& study);
// The grid crossed with `seeds`: each seed's values (the winners of an earlier study, see
// phases.h) come first in every configuration of theirs.
Result<std::vector<TrialSpec>> ExpandSpace(const Study& study, const std::vector<Params>& seeds);

// The constraints of a study, parsed once, for configurations proposed one at a time (tpe).
class ConstraintChecker {
 public:
  static Result<ConstraintChecker> Make(const Study& study);
  // The trial of `params`; dropped_reason names the first constraint that is false. Errors for a
  // constraint that cannot be evaluated (comparing a string to a number).
  Result<TrialSpec> Check(Params params) const;

 private:
  std::string path_;
  std::vector<std::pair<Constraint, Expr>> constraints_;
  std::map<std::string, ExprValue> builtins_;
};

}  // namespace sweep::study
