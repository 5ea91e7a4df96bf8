// The controller's lease; see lease.h.
#include "run/lease.h"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <random>

#include "base/terminal.h"

namespace sweep::run {
namespace {

std::string ReadBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  while (!id.empty() && (id.back() == ' ' || id.back() == '\r')) id.pop_back();
  return id;
}

// Whether `pid` names a live process of this machine (EPERM: it lives, as another user's).
bool ProcessLives(int64_t pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::string NewToken(const ControllerIdentity& me) {
  std::random_device rd;
  return fmt::format("{}:{}:{}:{:08x}{:08x}", me.host, me.pid, me.boot_id.substr(0, 8), rd(), rd());
}

Status Refusal(const store::LeaseRecord& lease, double now, double timeout_s) {
  std::string stop =
      lease.host.empty() ? fmt::format("kill {}", lease.pid) : fmt::format("ssh {} kill {}", lease.host, lease.pid);
  return Status::FailedPrecondition(fmt::format(
      "another slurmsweep run controls this study: {}. Only one run may control a study, from any host. Stop it "
      "with `{}` (it releases the study at once; its jobs stay queued and this run adopts them), or wait for it to "
      "end. A run that stopped renewing its heartbeat (killed, or its host is down) is taken over once the "
      "heartbeat is {:.0f} s old ([study] lease_timeout_s)",
      DescribeLease(lease, now), stop, timeout_s));
}

}  // namespace

ControllerIdentity ControllerIdentity::OfThisProcess() {
  ControllerIdentity me;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) me.host = host;
  me.pid = ::getpid();
  me.boot_id = ReadBootId();
  return me;
}

bool LeaseStands(const store::LeaseRecord& lease, const ControllerIdentity& me, double now, double timeout_s) {
  // Same host and boot: the pid answers for itself, and a dead one needs no waiting.
  if (!lease.boot_id.empty() && lease.host == me.host && lease.boot_id == me.boot_id && !ProcessLives(lease.pid)) {
    return false;
  }
  // A heartbeat from the future (the holder's clock is ahead) counts as fresh.
  return now - lease.heartbeat_at < timeout_s;
}

std::string DescribeLease(const store::LeaseRecord& lease, double now) {
  return fmt::format("host {}, pid {}, heartbeat {:.0f} s ago", lease.host.empty() ? "?" : TerminalSafe(lease.host),
                     lease.pid, std::max(0.0, now - lease.heartbeat_at));
}

RunHolder FindRunHolder(store::Store& store, const std::optional<std::string>& lock_holder, double now,
                        double timeout_s) {
  RunHolder h;
  auto lease = store.ReadLease();
  ControllerIdentity me = ControllerIdentity::OfThisProcess();
  if (lease.ok() && *lease) {
    const store::LeaseRecord& l = **lease;
    h.host = l.host;
    h.pid = std::to_string(l.pid);
    h.heartbeat_age_s = std::max(0.0, now - l.heartbeat_at);
    h.going_on = LeaseStands(l, me, now, timeout_s);
    h.stale = !h.going_on;
  }
  // The local lock is the fast path: a run here that holds it goes on, whatever the lease says.
  if (!h.going_on && lock_holder) {
    h = RunHolder{};
    h.going_on = true;
    h.pid = *lock_holder;
  }
  return h;
}

Status Lease::Check(store::Store& store, const ControllerIdentity& me, double now, double timeout_s) {
  auto lease = store.ReadLease();
  if (!lease.ok()) return lease.status();
  if (*lease && LeaseStands(**lease, me, now, timeout_s)) return Refusal(**lease, now, timeout_s);
  return Status::OK();
}

Result<Lease> Lease::Take(store::Store& store, const ControllerIdentity& me, double now, double timeout_s,
                          std::string* took_over) {
  store::LeaseRecord mine{NewToken(me), me.host, me.pid, me.boot_id, now, now};
  std::string previous;
  // Read and write in one write transaction: two runs that share the database's locks cannot
  // both see the lease free.
  Status st = store.InTransaction([&]() -> Status {
    auto lease = store.ReadLease();
    if (!lease.ok()) return lease.status();
    if (*lease) {
      if (LeaseStands(**lease, me, now, timeout_s)) return Refusal(**lease, now, timeout_s);
      previous = DescribeLease(**lease, now);
    }
    return store.WriteLease(mine);
  });
  if (!st.ok()) return st;
  if (took_over) *took_over = previous;
  return Lease(&store, std::move(mine), timeout_s / 10);
}

Lease::Lease(Lease&& other) noexcept
    : store_(other.store_),
      record_(std::move(other.record_)),
      renew_every_s_(other.renew_every_s_),
      writes_(other.writes_) {
  other.store_ = nullptr;
}

Lease::~Lease() {
  if (store_) (void)store_->ReleaseLease(record_.token);
}

Status Lease::Renew(double now) {
  // A heartbeat this young cannot have been taken over (that needs it timeout_s old).
  if (store_ && now - record_.heartbeat_at < renew_every_s_ && now >= record_.heartbeat_at) return Status::OK();
  if (!store_) return Status::FailedPrecondition("this run no longer controls the study (its lease was taken over)");
  ++writes_;
  auto still = store_->RenewLease(record_.token, now, ::getpid());
  if (!still.ok()) return still.status();
  if (*still) {
    record_.heartbeat_at = now;
    return Status::OK();
  }
  auto holder = store_->ReadLease();
  std::string who = holder.ok() && *holder ? DescribeLease(**holder, now) : "no run holds it now";
  store_ = nullptr;  // not ours to release any more
  return Status::FailedPrecondition(fmt::format(
      "this run no longer controls the study: its lease was taken over ({}) after this run's heartbeat was older "
      "than [study] lease_timeout_s; it stops here so that one run controls the study (the jobs it submitted are "
      "the other run's now)",
      who));
}

}  // namespace sweep::run
