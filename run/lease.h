// Lease: one controller per study, whatever the host. The local flock (run_lock.h) only stops a
// second run on the same machine; login nodes that share the study's directory over NFS, Lustre
// or GPFS each have their own. So a run also holds a lease in the study's database itself: the
// holder's host, pid and boot id and a heartbeat it renews on a tick (Renew). A run that finds
// another run's lease with a fresh heartbeat is refused, naming the holder; a lease whose
// heartbeat is older than [study] lease_timeout_s (its holder was killed, or its host died) is
// taken over, with an event. On the holder's own host and boot a lease whose pid is gone is
// taken over at once.
//
// What holds where (docs/shared-filesystems.md): the lease is read and written in one write
// transaction (BEGIN IMMEDIATE), so where SQLite's locks reach every host (a local disk, NFS with
// lockd, Lustre mounted with flock, GPFS) two runs started at once cannot both take it. Where
// they do not (a FUSE mount such as sshfs, NFS with nolock), the lease still refuses a run
// started while another's heartbeat is fresh, and a run whose lease was taken over learns it at
// its next renewal (RenewLease matches its token) and stops before it submits anything; only two
// runs started within the same instant could both begin, which is why the database belongs on a
// local disk or a filesystem with locks. Ages compare the holder's clock with the reader's:
// hosts of a cluster keep their clocks within a second of each other (NTP), far below the timeout.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "store/store.h"

namespace sweep::run {

// Who this process is, as a lease names it.
struct ControllerIdentity {
  std::string host;     // gethostname()
  int64_t pid = 0;      // getpid()
  std::string boot_id;  // /proc/sys/kernel/random/boot_id: a pid means nothing across reboots
  static ControllerIdentity OfThisProcess();
};

// What `status` says about who runs the study: from the lease, or (a run of an older slurmsweep,
// or one that has not opened the database yet) the local flock's pid.
struct RunHolder {
  bool going_on = false;
  std::string host;                       // empty when only the local lock is known
  std::string pid;                        // as the lease or the lock file says it
  std::optional<double> heartbeat_age_s;  // seconds since the holder's last renewal
  // A lease left by a run that stopped renewing it (killed): the next run takes it over.
  bool stale = false;
};

// Whether `lease` still holds for a run of `me` at `now`: its heartbeat is younger than
// `timeout_s`, unless it was taken on this host and boot by a process that is gone.
bool LeaseStands(const store::LeaseRecord& lease, const ControllerIdentity& me, double now, double timeout_s);

// "host login1, pid 1234, heartbeat 3 s ago"
std::string DescribeLease(const store::LeaseRecord& lease, double now);

// The run of the study going on, as `status` reports it: the lease in `store` (may be read-only),
// else the local lock file's holder `lock_holder`.
RunHolder FindRunHolder(store::Store& store, const std::optional<std::string>& lock_holder, double now,
                        double timeout_s);

class Lease {
 public:
  // Takes the study's lease in one write transaction. Refused (kFailedPrecondition) while another
  // run's lease stands, naming its host, pid and heartbeat's age and how to stop it. A lease that
  // no longer stands is taken over; `took_over` (if given) then says from whom.
  static Result<Lease> Take(store::Store& store, const ControllerIdentity& me, double now, double timeout_s,
                            std::string* took_over = nullptr);
  // The refusal Take would give, without writing anything (before --detach forks).
  static Status Check(store::Store& store, const ControllerIdentity& me, double now, double timeout_s);

  Lease(Lease&& other) noexcept;
  Lease& operator=(Lease&&) = delete;
  // Releases the lease if this run still holds it: `status` then says at once that no run goes on.
  ~Lease();

  // The heartbeat, asked before every tick: writes when the last one is older than a tenth of the
  // timeout (a write on a network filesystem costs round trips to the server), so a live run's
  // heartbeat is never older than that plus one tick, and a run that was stopped for longer than the
  // timeout (suspended, its host asleep) writes, and learns, before its next tick. kFailedPrecondition
  // naming the new holder when another run took the lease over: this run must stop.
  Status Renew(double now);
  // How many of the Renew calls wrote (ingest_bench).
  int64_t writes() const { return writes_; }
  const store::LeaseRecord& record() const { return record_; }

 private:
  Lease(store::Store* store, store::LeaseRecord record, double renew_every_s)
      : store_(store), record_(std::move(record)), renew_every_s_(renew_every_s) {}
  store::Store* store_;  // null once moved from
  store::LeaseRecord record_;
  double renew_every_s_;
  int64_t writes_ = 0;
};

}  // namespace sweep::run
