// A trial's key from its parameter values; see trial_key.h.
#include "study/trial_key.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace sweep::study {

std::string TrialKey(const Params& params) {
  std::vector<std::string> parts;
  for (const auto& [name, v] : params) {
    const char* type = std::holds_alternative<std::string>(v) ? "s" : std::holds_alternative<bool>(v) ? "b" : "n";
    parts.push_back(fmt::format("{}={}:{}", name, type, ParamToString(v)));
  }
  std::sort(parts.begin(), parts.end());
  uint64_t h = 1469598103934665603ULL;
  for (const auto& part : parts) {
    for (unsigned char c : part) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    h ^= 0xff;
    h *= 1099511628211ULL;
  }
  return fmt::format("t-{:012x}", h & 0xffffffffffffULL);
}

}  // namespace sweep::study
