// The tpe sampler's view of a study: its [space] as the sampler's dimensions, a stored trial as
// an observation (point, outcome, objective), and another study's trials as a warm start.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <optional>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "run/memory_feedback.h"
#include "run/run_context.h"
#include "planner/planner.h"
#include "sampler/tpe.h"
#include "store/store.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep::run {

std::vector<sampler::Dimension> SamplerSpace(const study::Study& study);
// The parameter values of a proposal, typed as the study file's [space] gives them.
Params ParamsOf(const study::Study& study, const sampler::Point& x);
// A stored trial's values as a point of the study's space; nullopt when they are not one (a
// parameter missing, a choice the file no longer lists, a value outside the range).
std::optional<sampler::Point> PointOf(const study::Study& study, const std::string& params_json);
// A tpe study's own trials among `stored`: those whose values are a point of the file's [space]
// that maps back to their key (with their seed, for a study with repeats), as checked specs in
// the order of `stored`. After an edit to [space], older trials stay history, as for a grid.
Result<std::vector<TrialSpec>> StoredTpeTrials(const study::Study& study,
                                               const std::vector<store::TrialRecord>& stored);
// What a trial in `state` tells the sampler (sampler::Outcome); completed and pruned trials need
// their objective's last value too.
sampler::Outcome OutcomeOf(const std::string& state);
// The observation a stored trial makes: the objective's last value (negated for mode = "max").
Result<std::optional<sampler::Observation>> ObserveTrial(store::Store& store, const study::Study& study,
                                                         const store::TrialRecord& trial);
// A tpe study's warm start ([search] seed_from): every ended trial of the other study whose values
// are a point of this study's space, as observations of source 1. Errors name the seed_from line.
Result<std::vector<sampler::Observation>> WarmStartObservations(const study::Study& study);

// The sampler's settings as `run` proposes with them: the study's [search] seed, and Optuna's ten
// random trials first, fewer in a small budget so the model gets its turn.
sampler::Options TpeOptions(const study::Study& study);
// Whether the sampler may propose `spec` by the study alone: not dropped by a constraint and, with a
// model, the planner's parallelism rules and (unless `submit_predicted_oom`) its memory verdict, the
// headroom grown to `headroom_bytes` when ended trials measured more (at most the plan's: as planned).
// What ended trials' CUDA OOMs rule out is the caller's (DominatedByOom).
bool TpeAllows(const study::Study& study, const TrialSpec& spec, bool submit_predicted_oom, double headroom_bytes);
// The first proposals of a fresh `run`, as it makes them (TpeOptions, the warm start, TpeAllows
// without --submit-predicted-oom): those no result can change, that is the random start-up and the
// first tick's batch of max_concurrent. A CUDA OOM or a measured memory peak among them can still rule
// out a later one, as it would in `run`.
Result<std::vector<TrialSpec>> FirstTpeProposals(const study::Study& study);

// The trials a tpe study's budget makes: [search] trials configurations, each `repeats` trials.
int TpeBudgetTrials(const study::Study& study);
// A seeded study's seeds as the template gets them ("{{seed}} = 0, 1, 2"); "" when not seeded.
std::string SeedsText(const study::Study& study);

// `slurmsweep plan` for a tpe study. Its trials are proposed as results come in, so what can be
// checked up front is the region proposals are drawn from: every combination of the space's lists
// and integer ranges (the knobs constraints, parallelism rules and the memory plan read), each
// with its verdict, and the float ranges drawn within each. A constraint that names a float
// parameter is checked on each proposal instead.
struct TpeRegion {
  double combinations = 1;                      // of the lists and integer ranges
  std::vector<TrialSpec> rows;                  // each combination ("#1", ...); empty when too many to list
  std::optional<planner::Plan> plan;            // the memory plan of `rows` (a study with a model)
  std::vector<const study::ParamSpec*> floats;  // drawn within every combination
  std::vector<const study::Constraint*> per_proposal;
  std::vector<TrialSpec> first;  // FirstTpeProposals
  int Proposable() const;        // rows that may be proposed
};
Result<TpeRegion> PlanTpeRegion(const study::Study& study);
// The region as text, in a bounded number of lines: each parameter's values or range, how many
// combinations may be proposed and, by reason, how many may not, and the first proposals.
std::string RenderTpeRegion(const study::Study& study, const TpeRegion& region);
// `plan --json`'s "region" member: every combination with its verdict, and the summary the text shows.
nlohmann::json TpeRegionJson(const study::Study& study, const TpeRegion& region);

// The run loop's tpe proposals (Runner owns one for a study with sampler = "tpe"): the study's
// trials so far, rebuilt from the store, and the warm start; each proposal respects constraints,
// the planner's rules and memory verdict (calibrated by MemoryFeedback), and no CUDA OOM of a trial
// needing no more memory.
class TpeProposer {
 public:
  TpeProposer(RunContext& ctx, MemoryFeedback& memory) : ctx_(ctx), memory_(memory) {}

  // This study's trials so far (added to ctx.specs), their memory plan, the headroom they
  // calibrated, and the warm start ([search] seed_from).
  Status Prepare();
  // Proposes up to `free_slots` new trials (fewer with trials already waiting, or near the budget)
  // from every trial in the store, stores them new and appends them to `trials`.
  Status Propose(std::vector<store::TrialRecord>& trials, int free_slots);
  // Whether the sampler may propose `spec`: constraints, the planner's rules and memory verdict,
  // and no CUDA OOM of a trial needing no more memory (`ooms`).
  bool Feasible(const TrialSpec& spec, const std::vector<const TrialSpec*>& ooms);
  // A tpe study with budget left and configurations left to propose (false for other samplers).
  bool MoreToPropose(const std::vector<store::TrialRecord>& trials) const;

 private:
  RunContext& ctx_;
  MemoryFeedback& memory_;
  std::vector<sampler::Observation> warm_;  // another study's trials ([search] seed_from)
  bool exhausted_ = false;                  // no feasible configuration left to propose
};

// The tpe sampler's history of this study: one observation per configuration (in the order of
// its first trial), from its repeats' observations: pending while any repeat is; else the mean of
// the valued ones (complete when none was pruned, partial otherwise); else infeasible if any
// repeat was, else ignored. `observations`: (ConfigIdentity, observation) per trial, in trial order.
std::vector<sampler::Observation> MergeRepeats(
    const std::vector<std::pair<std::string, sampler::Observation>>& observations);

// How many configurations (each `repeats` trials) a tpe study proposes for `free` slots: at least
// one while a slot is free, so a study whose repeats outnumber max_concurrent still moves.
int ConfigsForSlots(int free, int repeats);

// The enqueued configurations ([[search.enqueue]]) of a tpe study that are not in `own` yet
// (ConfigIdentity of its trials), in file order, at most `k`, as points of its space.
std::vector<sampler::Point> PendingEnqueued(const study::Study& study, const std::set<std::string>& own, int k);

}  // namespace sweep::run
