// Human-readable rendering of a Status.
#include "base/status.h"

namespace sweep {

std::string Status::ToString() const {
  switch (code_) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "invalid input: " + message_;
    case Code::kNotFound:
      return "not found: " + message_;
    case Code::kIOError:
      return "I/O error: " + message_;
    case Code::kUnavailable:
      return "unavailable: " + message_;
    case Code::kFailedPrecondition:
      return "cannot do that now: " + message_;
    case Code::kResourceExhausted:
      return "limit reached: " + message_;
    case Code::kInternal:
      return "internal error: " + message_;
  }
  return message_;
}

}  // namespace sweep
