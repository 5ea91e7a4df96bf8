// libFuzzer target for the training-log parser (logs/metrics_parser.h). Besides "no
// crash", it checks the property the run loop relies on: reading a log in two chunks, the
// second starting at the first's `consumed`, yields exactly what one read of the whole does.
//
// Input: byte 0 flags (bit 0: JSON lines, else Megatron; bit 1: insert a line of about
// kMaxLineBytes), bytes 1-2 the split point (little-endian), byte 3 the long line's length
// offset, then the log text.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "logs/metrics_parser.h"

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "metrics_fuzz: %s\n", what.c_str());
  std::abort();
}

bool SameDouble(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

struct Totals {
  std::vector<sweep::MetricPoint> points;
  size_t consumed = 0, lines = 0, malformed = 0;
  sweep::logs::ParserState state;
};

void Add(Totals& t, const sweep::logs::ParseOutput& out, std::string_view chunk, const char* which) {
  if (out.consumed > chunk.size()) Die(std::string(which) + ": consumed past the chunk");
  // Only whole lines are consumed, except the head of an over-long line that is being dropped.
  if (out.consumed > 0 && chunk[out.consumed - 1] != '\n' && !t.state.skipping_long_line) {
    Die(std::string(which) + ": consumed a partial line");
  }
  t.points.insert(t.points.end(), out.points.begin(), out.points.end());
  t.consumed += out.consumed;
  t.lines += out.lines;
  t.malformed += out.malformed;
}

void RequireSame(const Totals& whole, const Totals& split, size_t at) {
  auto fail = [&](const std::string& what) { Die(what + " differs when split at byte " + std::to_string(at)); };
  if (whole.points.size() != split.points.size()) fail("number of points");
  for (size_t i = 0; i < whole.points.size(); ++i) {
    const auto& a = whole.points[i];
    const auto& b = split.points[i];
    if (a.step != b.step || a.name != b.name || !SameDouble(a.value, b.value) || !SameDouble(a.time_s, b.time_s)) {
      fail("point " + std::to_string(i) + " (" + a.name + ")");
    }
  }
  if (whole.consumed != split.consumed) fail("consumed");
  if (whole.lines != split.lines) fail("line count");
  if (whole.malformed != split.malformed) fail("malformed count");
  if (whole.state.last_step != split.state.last_step || !SameDouble(whole.state.time_s, split.state.time_s) ||
      whole.state.skipping_long_line != split.state.skipping_long_line) {
    fail("parser state");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const uint8_t flags = data[0];
  const size_t split_raw = data[1] | (static_cast<size_t>(data[2]) << 8);
  const uint8_t long_offset = data[3];
  // Bit 0 and bits 2-7 pick the format (the corpus's older inputs, bits 2-7 zero: Megatron or JSON lines).
  using sweep::MetricFormat;
  constexpr MetricFormat kFormats[] = {MetricFormat::kMegatron,  MetricFormat::kJsonLines,  MetricFormat::kHuggingFace,
                                       MetricFormat::kLightning, MetricFormat::kTorchtitan, MetricFormat::kDeepSpeed,
                                       MetricFormat::kAuto};
  const MetricFormat format = kFormats[((flags & 1) | ((flags >> 2) << 1)) % std::size(kFormats)];
  // Reused across runs: a fresh 1 MiB string each time is an mmap/munmap pair under ASan,
  // which cut the rate from thousands to under a hundred runs a second.
  static std::string log;
  log.assign(reinterpret_cast<const char*>(data) + 4, size - 4);

  size_t at = 0;
  if (flags & 2) {
    // Lines near kMaxLineBytes are where "skip the rest of an over-long line" starts and ends;
    // random inputs never get that long, so one is made and the split put near its end.
    size_t insert_at = (split_raw & 0xff) % (log.size() + 1);
    size_t pad = sweep::logs::kMaxLineBytes - 16 + (long_offset % 32);
    log.insert(insert_at, pad, 'x');
    long long near = static_cast<long long>(insert_at + pad) + static_cast<long long>(split_raw >> 8) - 128;
    at = static_cast<size_t>(std::clamp<long long>(near, 0, static_cast<long long>(log.size())));
  } else {
    at = split_raw % (log.size() + 1);
  }

  Totals whole;
  Add(whole, sweep::logs::ParseMetrics(log, format, whole.state), log, "one read");

  Totals split;
  std::string_view first = std::string_view(log).substr(0, at);
  Add(split, sweep::logs::ParseMetrics(first, format, split.state), first, "first chunk");
  std::string_view second = std::string_view(log).substr(split.consumed);
  Add(split, sweep::logs::ParseMetrics(second, format, split.state), second, "second chunk");

  RequireSame(whole, split, at);
  return 0;
}
