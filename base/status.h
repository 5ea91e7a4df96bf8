// Status and Result<T>: expected failures travel up as values carrying context;
// only the CLI prints them and maps them to exit codes (see cli/main.cc).
// Module base/: the vocabulary every module shares; uses the standard library only.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sweep {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,     // bad study file, template, flag: the user must fix input
    kNotFound,            // a file, trial or job that does not exist
    kIOError,             // local disk or database trouble
    kUnavailable,         // connection or scheduler down: retry later, never mark trials
    kFailedPrecondition,  // state forbids the action (e.g. study already running)
    kResourceExhausted,   // a quota says "not now" (e.g. a QOS submit limit): wait, then try again
    kInternal,
  };

  // Why, where the code alone does not say: set where the failure is understood (the Slurm client
  // parsing sbatch's refusal, the store meeting a lock), so callers branch on it, never on text.
  enum class Cause {
    kNone = 0,
    kStudyWideRefusal,  // sbatch refused a setting every job of the study shares (partition, account, ...)
    kDatabaseBusy,      // another process holds the database lock
    kReauthNeeded,      // the cluster wants a new login (a second factor, a master to reopen) only a human gives
  };

  Status() = default;
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status Unavailable(std::string msg) { return Status(Code::kUnavailable, std::move(msg)); }
  static Status FailedPrecondition(std::string msg) { return Status(Code::kFailedPrecondition, std::move(msg)); }
  static Status ResourceExhausted(std::string msg) { return Status(Code::kResourceExhausted, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  bool IsUnavailable() const { return code_ == Code::kUnavailable; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsResourceExhausted() const { return code_ == Code::kResourceExhausted; }
  Cause cause() const { return cause_; }
  Status WithCause(Cause cause) const {
    Status s = *this;
    if (!s.ok()) s.cause_ = cause;
    return s;
  }

  // "context: message"; keeps the code so callers can still branch on it.
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    return Status(code_, std::string(context) + ": " + message_).WithCause(cause_);
  }
  std::string ToString() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  Cause cause_ = Cause::kNone;
  std::string message_;
};

// A value or the Status saying why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                                              // NOLINT: implicit on purpose
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sweep

// Early return of a failed Status or Result's status.
#define SWEEP_RETURN_IF_ERROR(expr)               \
  do {                                            \
    auto _st = (expr);                            \
    if (!_st.ok()) return ::sweep::ToStatus(_st); \
  } while (0)

namespace sweep {
inline const Status& ToStatus(const Status& s) { return s; }
template <class T>
const Status& ToStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace sweep
