// SPDX-License-Identifier: Apache-2.0
// The GPU sampler's pure parts (dlx/launch/gpu_usage.hpp): which devices are the trial's, the
// interval statistics of the driver's samples, the series names; and that a node without NVML
// samples no GPU and says why. The readings themselves need a GPU: tests/gpu/gpu_metrics_check.cpp
// (scripts/gpu-check.sh).
#include <catch2/catch.hpp>

#include "dlx/launch/gpu_usage.hpp"
#include "nvml_api.hpp"

using dlx::launch::devices_named;
using dlx::launch::interval_stats;
using Catch::Matchers::Contains;

TEST_CASE("the driver's samples after the last one seen give the interval's least, mean and most",
          "[launcher][gpu]") {
  const std::vector<std::pair<unsigned long long, double>> samples{{100, 10}, {200, 90}, {300, 50}, {400, 20}};
  const auto all = interval_stats(samples, 0);
  REQUIRE(all);
  CHECK(all->min == 10);
  CHECK(all->max == 90);
  CHECK(all->mean == Approx(42.5));
  CHECK(all->newest_us == 400);

  const auto later = interval_stats(samples, 200);  // what the last sample already counted is left out
  REQUIRE(later);
  CHECK(later->min == 20);
  CHECK(later->max == 50);
  CHECK(later->mean == Approx(35));
  CHECK_FALSE(interval_stats(samples, 400));  // nothing new: no figure, not a zero
  CHECK_FALSE(interval_stats({}, 0));
}

TEST_CASE("the visible-device list names the trial's GPUs by index or UUID, in its order", "[launcher][gpu]") {
  const std::vector<std::string> uuids{"GPU-aaaa1111-0000", "GPU-bbbb2222-0000", "GPU-cccc3333-0000"};
  CHECK(devices_named({"2", "0"}, uuids) == std::vector<unsigned>{2, 0});
  CHECK(devices_named({"GPU-bbbb2222-0000"}, uuids) == std::vector<unsigned>{1});
  CHECK(devices_named({"GPU-cccc"}, uuids) == std::vector<unsigned>{2});  // a unique prefix, as CUDA takes
  CHECK(devices_named({"bbbb2222"}, uuids) == std::vector<unsigned>{1});  // without "GPU-"
  // Nothing named, or a name that matches no device, one device twice, an ambiguous prefix: the
  // sampler follows the trainer's processes instead.
  CHECK_FALSE(devices_named({}, uuids));
  CHECK_FALSE(devices_named({"3"}, uuids));
  CHECK_FALSE(devices_named({"MIG-1234"}, uuids));
  CHECK_FALSE(devices_named({"1", "1"}, uuids));
  CHECK_FALSE(devices_named({"GPU-"}, uuids));
}

TEST_CASE("each GPU's series is named by its place in the trial's list, and only read figures are kept",
          "[launcher][gpu]") {
  dlx::launch::GpuSample first, second;
  first.util_mean = 97.5;
  first.util_min = 90;
  first.util_max = 100;
  first.memory_bytes = 2.0e9;
  first.power_watts = 412.5;
  second.util_mean = 3;
  std::map<std::string, double> values{{"cpu_percent", 101}};
  dlx::launch::add_gpu_series(values, {first, second});
  CHECK(values.at("cpu_percent") == 101);
  CHECK(values.at("gpu0_util_percent") == 97.5);
  CHECK(values.at("gpu0_util_min_percent") == 90);
  CHECK(values.at("gpu0_util_max_percent") == 100);
  CHECK(values.at("gpu0_memory_bytes") == 2.0e9);
  CHECK(values.at("gpu0_power_watts") == 412.5);
  CHECK(values.at("gpu1_util_percent") == 3);
  CHECK_FALSE(values.contains("gpu0_trial_sm_percent"));  // not read: left out, not written as 0
  CHECK_FALSE(values.contains("gpu1_memory_bytes"));
  CHECK(values.size() == 7);
}

TEST_CASE("a node without NVML samples no GPU and says why", "[launcher][gpu]") {
  std::string why;
  CHECK(dlx::launch::nvml::load(why, "libdlx-no-such-nvml.so.1") == nullptr);
  CHECK_THAT(why, Contains("no NVIDIA management library") && Contains("libdlx-no-such-nvml.so.1"));
  // A library that is there but is not NVML.
  why.clear();
  CHECK(dlx::launch::nvml::load(why, "libm.so.6") == nullptr);
  CHECK_THAT(why, Contains("lacks the NVML functions"));
}
