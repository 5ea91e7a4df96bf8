// Tests of the typo suggestions every "did you mean" message uses.
#include "base/text.h"

#include <catch2/catch.hpp>

#include <random>
#include <string>
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

TEST_CASE("CleanText replaces control bytes and invalid UTF-8 with U+FFFD and keeps the rest", "[text]") {
  const std::string r = "\xEF\xBF\xBD";
  CHECK(CleanText("lm_loss \xC3\xA9t\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80\ttab\n") ==
        "lm_loss \xC3\xA9t\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80\ttab\n");
  CHECK(CleanText(std::string("a\0b", 3)) == "a" + r + "b");
  CHECK(CleanText("\x1b[31m") == r + "[31m");
  CHECK(CleanText("\x7f") == r);
  CHECK(CleanText("\xC2\x85") == r + r);                  // C1 control NEL
  CHECK(CleanText("\xC0\xAF") == r + r);                  // overlong '/'
  CHECK(CleanText("\xED\xA0\x80") == r + r + r);          // a surrogate
  CHECK(CleanText("\xF4\x90\x80\x80") == r + r + r + r);  // past U+10FFFF
  CHECK(CleanText("\xE2\x9C") == r + r);                  // cut short
  CHECK(CleanText("\xff") == r);
}

TEST_CASE("CleanText on random bytes: valid UTF-8 out, no control byte, clean input unchanged (property)", "[text]") {
  std::mt19937 rng(45);
  for (int round = 0; round < 2000; ++round) {
    std::string in(rng() % 40, '\0');
    for (char& c : in) c = static_cast<char>(rng() % 256);
    std::string out = CleanText(in);
    for (size_t i = 0; i < out.size();) {
      size_t n = CleanCharLength(out, i);
      INFO("round " << round << " at " << i);
      REQUIRE(n > 0);
      i += n;
    }
    CHECK(CleanText(out) == out);  // idempotent: what is clean stays as it is
  }
}

}  // namespace sweep
