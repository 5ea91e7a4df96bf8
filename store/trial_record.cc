// A stored trial's values read back typed; see TrialRecord in store.h. The codec itself is
// base/params_text.h's, which the study writes the column with.
#include "store/store.h"

#include "base/params_text.h"
#include "base/trial_state.h"

namespace sweep::store {

TrialRecord TrialRecord::FromSpec(const TrialSpec& spec) {
  TrialRecord r;
  r.trial_key = spec.key;
  r.params_json = spec.params_json;
  r.state = spec.dropped_reason.empty() ? std::string(kTrialNew) : std::string(kTrialDropped);
  r.reason = spec.dropped_reason;
  return r;
}

Params TrialRecord::Values(const std::vector<std::string>& names) const { return ParamsFromText(params_json, names); }

std::vector<ParamCell> TrialRecord::Cells(const std::vector<std::string>& names) const {
  return ParamCellsFromText(params_json, names);
}

bool TrialRecord::HoldsValues(const std::string& wanted) const { return ParamsTextHolds(params_json, wanted); }

}  // namespace sweep::store
