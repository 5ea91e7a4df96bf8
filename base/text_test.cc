// Tests of the typo suggestions every "did you mean" message uses.
#include "base/text.h"

#include <catch2/catch.hpp>

#include <string_view>
#include <vector>

namespace sweep {

TEST_CASE("ClosestWord suggests typos of a known word, not unrelated short words", "[text]") {
  std::vector<std::string_view> params = {"lr", "optimizer", "tp"};
  CHECK(ClosestWord("mbs", params).empty());  // nothing like it: no suggestion
  CHECK(ClosestWord("tpp", params) == "tp");
  CHECK(ClosestWord("optimiser", params) == "optimizer");
  std::vector<std::string_view> keys = {"smoothing", "grace_s", "median"};
  CHECK(ClosestWord("smothing", keys) == "smoothing");
  CHECK(ClosestWord("grace", keys) == "grace_s");
  CHECK(ClosestWord("mediann", keys) == "median");
  CHECK(ClosestWord("lm_los", {"lm_loss", "grad_norm"}) == "lm_loss");
}

}  // namespace sweep
