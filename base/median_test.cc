// Tests of the median the progress view and the report entries share.
#include "base/median.h"

#include <catch2/catch.hpp>

namespace sweep {

TEST_CASE("Median: the middle value, the mean of the two middle ones for an even count, none for none", "[median]") {
  CHECK(*Median({3, 1, 2}) == 2);
  CHECK(*Median({4, 1, 3, 2}) == 2.5);
  CHECK(*Median({7}) == 7);
  CHECK_FALSE(Median({}).has_value());
}

}  // namespace sweep
