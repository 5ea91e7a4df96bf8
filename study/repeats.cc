// Repeats over seeds and enqueued configurations; see repeats.h.
#include "study/repeats.h"

#include "base/params_text.h"
#include "study/trial_key.h"

namespace sweep::study {

std::vector<TrialSpec> RepeatTrials(const Study& study, const TrialSpec& config, int64_t first, int64_t count) {
  if (!Seeded(study)) return {config};
  std::vector<TrialSpec> out;
  for (int64_t seed = first; seed < first + count; ++seed) {
    TrialSpec t = config;
    t.params.emplace_back(study.seed_var, seed);
    if (seed != 0) t.key = TrialKey(t.params);
    t.params_json = ParamsTextWith(config.params_json, study.seed_var, seed);
    out.push_back(std::move(t));
  }
  return out;
}

std::string ConfigIdentity(const Study& study, const std::string& params_json) {
  if (!Seeded(study)) return params_json;
  return ParamsTextWithout(params_json, study.seed_var);
}

int64_t SeedOf(const Study& study, const std::string& params_json) {
  if (!Seeded(study)) return 0;
  return IntegerInParamsText(params_json, study.seed_var).value_or(0);
}

}  // namespace sweep::study
