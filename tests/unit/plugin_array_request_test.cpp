// SPDX-License-Identifier: Apache-2.0
// A user's --array next to --dl-experiment, read by hand (std::regex overflowed sbatch's stack on a
// long value, and std::stol's "stol" reached the user for an index past 64 bits).
#include <catch2/catch.hpp>

#include <string>

#include "array_request.hpp"

using dlx::spank::check_user_array;
using dlx::spank::highest_array_index;

TEST_CASE("the highest index of an --array value", "[plugin][array]") {
  struct Row {
    std::string spec;
    long highest;  // -1: not an index list dlx reads (sbatch reports it)
  };
  auto row = GENERATE(values<Row>({
      {"0", 0}, {"3", 3}, {"0-7", 7}, {"0-7:2", 7}, {"0-7:2%3", 7}, {"1,3", 3}, {"9,0-7:2%3", 9},
      {"0-15%4", 15}, {"007", 7}, {"7-2", 7},
      {"", -1}, {"a", -1}, {"1,", -1}, {",1", -1}, {"1-", -1}, {"1-3:", -1}, {"1 2", -1}, {"-1", -1},
      {"1;2", -1}, {"1-2-3", -1}, {"%4", -1},
  }));
  INFO(row.spec);
  const auto highest = highest_array_index(row.spec);
  if (row.highest < 0) {
    CHECK_FALSE(highest);
  } else {
    REQUIRE(highest);
    REQUIRE(highest->value);
    CHECK(*highest->value == static_cast<std::uint64_t>(row.highest));
  }
}

TEST_CASE("an index past 64 bits is named in a dlx message, not 'stol'", "[plugin][array]") {
  const auto highest = highest_array_index("1,99999999999999999999");
  REQUIRE(highest);
  CHECK_FALSE(highest->value);
  CHECK(highest->written == "99999999999999999999");
  CHECK(check_user_array("99999999999999999999", 4, "exp.yaml") ==
        "--dl-experiment: --array=99999999999999999999 names trial 99999999999999999999 but exp.yaml has "
        "4 trials (0-3) (drop --array to run every trial, or choose indices from 0-3)");
  CHECK(check_user_array("0-18446744073709551615", 4, "exp.yaml") ==
        "--dl-experiment: --array=0-18446744073709551615 names trial 18446744073709551615 but exp.yaml has "
        "4 trials (0-3) (drop --array to run every trial, or choose indices from 0-3)");
  CHECK(check_user_array("1,3%2", 4, "exp.yaml") == "");
  CHECK(check_user_array("0-9", 4, "examples/grid.yaml") ==
        "--dl-experiment: --array=0-9 names trial 9 but examples/grid.yaml has 4 trials (0-3) "
        "(drop --array to run every trial, or choose indices from 0-3)");
}

TEST_CASE("a 100,000-character --array is refused by length, shown short", "[plugin][array]") {
  const std::string digits(100'000, '9');
  CHECK(check_user_array(digits, 4, "exp.yaml") ==
        "--dl-experiment: --array is 100000 characters long, more than the limit of 65536: "
        "'99999999999999999999999999999999... (100000 bytes)' (drop --array to run every trial, or give ranges "
        "such as 0-3)");
  // Under the limit a long list is read in one pass: 30,000 items.
  std::string list = "0";
  for (int i = 1; i < 30'000; ++i) list += ",1";
  REQUIRE(list.size() < dlx::spank::kMaxArraySpecLength);
  CHECK(check_user_array(list, 4, "exp.yaml") == "");
  CHECK_THAT(check_user_array(list + ",4", 4, "exp.yaml"), Catch::Contains("names trial 4 but exp.yaml has 4 trials"));
  // A long run of digits under the limit: the same message, the value abbreviated.
  CHECK_THAT(check_user_array(std::string(60'000, '9'), 4, "exp.yaml"),
             Catch::StartsWith("--dl-experiment: --array=9999999999999999999999999999999999999999999999999999999"
                               "999999999... (60000 bytes) names trial 99999999"));
}
