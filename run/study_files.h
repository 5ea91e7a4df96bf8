// Where a study keeps its files on the cluster, and its claim on them. Invariant: a study never
// reads, runs or overwrites a file it did not write. Every name it writes carries the study's
// name (WORKDIR/scripts/STUDY/, WORKDIR/logs/STUDY/, WORKDIR/trials/STUDY/TRIAL), so studies that
// share a workdir and a [space] never touch each other's scripts, logs, marks or telemetry; and a
// claim (WORKDIR/.slurmsweep/studies/STUDY, a symbolic link whose target names the study's
// database entry, made atomically) refuses a second study of the same name from another database
// (unless that database, on this machine, is gone).
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "slurm/transport.h"
#include "store/store.h"

namespace sweep::run {

struct StudyFiles {
  std::string workdir;
  std::string study;
  // A study that a slurmsweep before these names submitted keeps the old ones (WORKDIR/scripts/,
  // WORKDIR/logs/, WORKDIR/trials/TRIAL) to its end: its jobs, stored log paths and checkpoints
  // (a chained trial resumes from its trial_dir) are there.
  bool legacy = false;

  std::string ScriptsDir() const;
  std::string LogsDir() const;
  std::string TrialLog(const std::string& trial_key, int attempt) const;
  std::string TrialScript(const std::string& trial_key, int attempt) const;
  // `index`: the task index, or "%a" for the array's --output.
  std::string ArrayLog(const std::string& array_name, const std::string& index) const;
  std::string ArrayScript(const std::string& array_name) const;
  std::string TrialDir(const std::string& trial_key) const;
  std::string ClaimPath() const;
};

// The files of `study` in `workdir`; legacy when one of its trials already has a log outside
// WORKDIR/logs/STUDY/ (submitted by a slurmsweep from before these names).
StudyFiles FilesOf(const std::string& workdir, const std::string& study, const std::vector<store::TrialRecord>& trials);

// What identifies a study's database entry in its claim: its creation time, the machine and the
// path of its database.
std::string ClaimToken(const store::StudyRecord& record, const std::string& host, const std::string& database);

// This machine's name, as claims record it.
std::string LocalHostName();

// Creates the directories the study writes to and claims its name in the workdir (`ln -s`, atomic:
// of two studies starting together one wins). A claim of another study of the same name is refused,
// saying what to do, unless it names a database on this machine (`host`) that no longer exists:
// that study is gone, and the claim is taken over (`*note` says so).
// The claim is also taken over when it names this very database path on this machine: the file was
// deleted and created again (README: delete NAME.db to start over). Before any takeover
// `before_takeover` runs (the study's live jobs, looked for by name): an error from it refuses.
Status ClaimStudyFiles(slurm::Transport& transport, const StudyFiles& files, const std::string& token,
                       const std::string& host, const std::string& study_path, std::string* note,
                       const std::function<Status()>& before_takeover = nullptr);

}  // namespace sweep::run
