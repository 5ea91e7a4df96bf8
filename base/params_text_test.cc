// Tests of a trial's parameter text (the store's column) and its reading back: the bytes every
// earlier version wrote stay the same, values come back with the type the study file gave them,
// and the report's text of a float keeps its decimal point.
#include "base/params_text.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <variant>

namespace sweep {
namespace {

const std::vector<std::string> kNames = {"mbs", "lr", "tiny", "opt", "warm"};

Params Typed() {
  return {{"mbs", int64_t{8}}, {"lr", 1.0}, {"tiny", 1e-5}, {"opt", std::string("adam")}, {"warm", true}};
}

TEST_CASE("a parameter text is a JSON object with sorted keys, as the store has always held it", "[params]") {
  // The study's order is not the text's: two orders of the same values are one text (one trial).
  CHECK(ParamsText(Typed()) == R"({"lr":1.0,"mbs":8,"opt":"adam","tiny":1e-05,"warm":true})");
  CHECK(ParamsText({{"opt", std::string("sgd")}, {"lr", 0.1}}) == R"({"lr":0.1,"opt":"sgd"})");
  CHECK(ParamsText({}) == "{}");
  // JSON has no NaN: a float that is not finite is stored as null.
  CHECK(ParamsText({{"x", std::numeric_limits<double>::quiet_NaN()}}) == R"({"x":null})");
}

TEST_CASE("a parameter text reads back typed, in the order asked", "[params]") {
  Params back = ParamsFromText(ParamsText(Typed()), kNames);
  REQUIRE(back.size() == 5);
  CHECK(back == Typed());
  CHECK(std::holds_alternative<double>(back[1].second));  // 1.0 stays a float, not the integer 1
  // A name without a value is left out; a text that is no object has none.
  Params some = ParamsFromText(R"({"lr":0.5})", {"mbs", "lr"});
  REQUIRE(some.size() == 1);
  CHECK(some[0] == std::pair<std::string, ParamValue>{"lr", 0.5});
  CHECK(ParamsFromText("not json", kNames).empty());
  CHECK(ParamsFromText("[1,2]", kNames).empty());
  // A null (a float that was not finite) is no value either: never the text "null", which a
  // string choice of that spelling would match.
  CHECK(ParamsFromText(R"({"lr":null,"mbs":8})", {"lr", "mbs"}) == Params{{"mbs", int64_t{8}}});
}

TEST_CASE("report cells keep the stored text of each value", "[params]") {
  std::vector<ParamCell> cells = ParamCellsFromText(ParamsText(Typed()), kNames);
  REQUIRE(cells.size() == 5);
  CHECK(cells[0].text == "8");
  CHECK(cells[1].text == "1.0");  // the template shows "1"; the store and the report "1.0"
  CHECK(cells[2].text == "1e-05");
  CHECK(cells[3].text == "adam");
  CHECK(cells[4].text == "true");
  CHECK(cells[0].Number() == 8.0);
  CHECK(cells[2].Number() == 1e-5);
  CHECK(!cells[3].Number());
  CHECK(!cells[4].Number());
  CHECK(*cells[4].value == ParamValue(true));
  // No value, or a null (a float that was not finite): an empty cell.
  std::vector<ParamCell> empty = ParamCellsFromText(R"({"lr":null})", {"lr", "mbs"});
  REQUIRE(empty.size() == 2);
  for (const ParamCell& c : empty) {
    CHECK(!c.value);
    CHECK(c.text.empty());
  }
}

TEST_CASE("a baseline's values match a stored trial as values or as text", "[params]") {
  std::string stored = ParamsText(Typed());
  CHECK(ParamsTextHolds(stored, R"({"mbs":8})"));
  CHECK(ParamsTextHolds(stored, R"({"lr":1})"));                  // an integer equal to the float
  CHECK(ParamsTextHolds(stored, R"({"mbs":"8","opt":"adam"})"));  // a number given as text
  CHECK(ParamsTextHolds(stored, R"({"tiny":"1e-05","warm":true})"));
  CHECK(ParamsTextHolds(stored, "{}"));
  CHECK_FALSE(ParamsTextHolds(stored, R"({"mbs":16})"));
  CHECK_FALSE(ParamsTextHolds(stored, R"({"warm":"yes"})"));
  CHECK_FALSE(ParamsTextHolds(stored, R"({"other":1})"));
  CHECK_FALSE(ParamsTextHolds(stored, "t-0123456789ab"));  // a trial key is no parameter text
  CHECK(IsParamsText(R"({"mbs":8})"));
  CHECK_FALSE(IsParamsText("t-0123456789ab"));
  CHECK_FALSE(IsParamsText("[8]"));
}

TEST_CASE("a repeat's seed is set, read and left out of the text", "[params]") {
  std::string config = R"({"lr":0.1,"opt":"sgd"})";
  std::string repeat = ParamsTextWith(config, "seed", 3);
  CHECK(repeat == R"({"lr":0.1,"opt":"sgd","seed":3})");
  CHECK(repeat == ParamsText({{"opt", std::string("sgd")}, {"lr", 0.1}, {"seed", int64_t{3}}}));
  CHECK(IntegerInParamsText(repeat, "seed") == 3);
  CHECK(!IntegerInParamsText(config, "seed"));
  CHECK(!IntegerInParamsText(R"({"seed":"3"})", "seed"));
  CHECK(ParamsTextWithout(repeat, "seed") == config);
  CHECK(ParamsTextWithout("not json", "seed") == "not json");
  CHECK(ParamsTextWith("not json", "seed", 0) == R"({"seed":0})");
}

}  // namespace
}  // namespace sweep
