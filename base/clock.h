// Clock: the one source of time, injected so tests can drive the run loop without sleeping.
// Module base/: the vocabulary every module shares; uses the standard library only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sweep {

/// Abstract so tests can swap in a fake clock. The real one is SystemClock.
class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since the Unix epoch, fractional.
  virtual double Now() const = 0;
  virtual void SleepFor(double seconds) = 0;
};

class SystemClock final : public Clock {
 public:
  double Now() const override;
  void SleepFor(double seconds) override;
};

// "2026-12-02T17:11:42Z" for a Unix time in seconds.
std::string FormatUtc(double unix_seconds);

}  // namespace sweep
