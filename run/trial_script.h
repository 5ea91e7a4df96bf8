// The study's sbatch template checked with the renderer the run loop uses, one trial's template
// variables, and the check that every trial of a study renders before anything is submitted (a
// value its template cannot carry is found at load, not when its trial comes up). The study
// module reads the template's file; rendering it is slurm/'s, so the check lives here.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "slurm/sbatch_script.h"
#include "store/store.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep::run {

// Checks the template of a loaded study before anything runs: placeholders where no quoting can
// be proven safe (slurm::CheckTemplateContexts), directives slurmsweep writes itself, and names
// the study does not define ("JOB.sbatch:LINE: unknown placeholder ..."; with seed_from, phase 1's
// parameters count as defined). A [space] parameter the template never names is a warning
// appended to study.warnings: trials that differ only in it would run the same job.
Status CheckStudyTemplate(study::Study& study);

// The variables a trial's template sees: [job.vars], the trial's parameters and the built-ins
// (template_vars.h) for `attempt` with its log at `log_path` and its `trial_dir` (StudyFiles::TrialDir;
// empty: WORKDIR/trials/STUDY/TRIAL).
std::map<std::string, std::string> TrialTemplateVars(const study::Study& study, const TrialSpec& spec, int attempt,
                                                     const std::string& log_path, const std::string& trial_dir = "");

// The template variables a study declares (`text = true`, `option = true`, `path = true` in
// [space] or [job.vars]; the built-in paths workdir, trial_dir and log): the only ones whose values
// may lie outside the safe alphabet, read as options, or be paths that leave their place
// (base/params.h).
slurm::DeclaredValues Declared(const study::Study& study);

// Renders the template once for each value of each [space] list (the other parameters at their
// first value or their range's low end): what a tpe study would refuse on a proposal, found at
// load. "space.NAME = VALUE" -> the renderer's refusal. Grid and random studies have their trials
// at load: RenderRefusals.
std::map<std::string, std::string> ValueRefusals(const study::Study& study);

// Renders the template for every trial not dropped, as its first attempt: trial key -> the
// renderer's refusal (file:line: placeholder, place, why), for the trials that cannot be.
std::map<std::string, std::string> RenderRefusals(const study::Study& study, const std::vector<TrialSpec>& specs);

// A trial's job as the run loop submits it. The job's name and --comment tag (matched on reconcile:
// "slurmsweep:study=S:trial=T:attempt=N"), and the #SBATCH header's study-wide part (work dir,
// partition/account/qos and [job] resources).
std::string TrialJobName(const study::Study& study, const std::string& trial_key);
std::string TrialCommentTag(const study::Study& study, const store::TrialRecord& trial);
slurm::SbatchHeader StudyHeader(const study::Study& study);
// The template rendered with the trial's values for its attempt and log path as `trial` holds them.
Result<std::string> RenderTrialBody(const study::Study& study, const TrialSpec& spec, const store::TrialRecord& trial,
                                    const std::string& trial_dir);
// `body` with slurmsweep's #SBATCH header, the telemetry sampler ([job] monitor) and the start mark:
// the script a trial's attempt is submitted with (its own, also when it runs as a job array's task).
Result<std::string> AddTrialHeader(const study::Study& study, const store::TrialRecord& trial, std::string_view body);

}  // namespace sweep::run
