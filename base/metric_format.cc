// Format names and the study's regular expressions; see metric_format.h.
#include "base/metric_format.h"

#include <utility>

namespace sweep {

namespace {
constexpr std::pair<std::string_view, MetricFormat> kFormatNames[] = {
    {"megatron", MetricFormat::kMegatron},   {"jsonl", MetricFormat::kJsonLines},
    {"hf", MetricFormat::kHuggingFace},      {"lightning", MetricFormat::kLightning},
    {"nemo", MetricFormat::kLightning},      {"torchtitan", MetricFormat::kTorchtitan},
    {"deepspeed", MetricFormat::kDeepSpeed}, {"regex", MetricFormat::kRegex},
    {"auto", MetricFormat::kAuto},
};
}  // namespace

bool ParseMetricFormat(std::string_view text, MetricFormat* out) {
  for (const auto& [name, format] : kFormatNames) {
    if (name == text) {
      *out = format;
      return true;
    }
  }
  return false;
}

std::string_view MetricFormatName(MetricFormat format) {
  for (const auto& [name, f] : kFormatNames) {
    if (f == format) return name;
  }
  return "?";
}

bool CompileMetricRegex(std::string name, std::string pattern, MetricRegex* out, std::string* error) {
  std::shared_ptr<std::regex> re;
  try {
    re = std::make_shared<std::regex>(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    *error = std::string("not a valid regular expression: ") + e.what();
    return false;
  }
  if (re->mark_count() < 1) {
    *error = "needs a capture group around the value, as in 'loss=([0-9.eE+-]+)'";
    return false;
  }
  out->name = std::move(name);
  out->pattern = std::move(pattern);
  out->compiled = std::move(re);
  return true;
}

}  // namespace sweep
