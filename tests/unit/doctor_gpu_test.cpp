// SPDX-License-Identifier: Apache-2.0
// `dlx doctor`'s finding on what the system metrics can read of a host's GPUs
// (tools/doctor/gpu_checks.hpp), for each kind of host; and the real reading of this one, which
// has no NVIDIA driver (CI's and the VM's).
#include <catch2/catch.hpp>

#include "dlx/launch/gpu_usage.hpp"
#include "gpu_checks.hpp"

using dlx::doctor::check_gpu_metrics;
using dlx::doctor::GpuMetricsFacts;
using dlx::doctor::Verdict;
using Catch::Matchers::Contains;

TEST_CASE("GPU metrics: a host without a driver is skipped, a broken library warned of", "[doctor]") {
  const auto login = check_gpu_metrics({"no NVIDIA management library (libnvidia-ml.so.1: cannot open ...)", {}});
  REQUIRE(login.size() == 1);
  CHECK(login[0].verdict == Verdict::skipped);
  CHECK_THAT(login[0].found, Contains("srun -N1 --gpus=1 dlx doctor --gpus"));

  const auto broken = check_gpu_metrics({"libnvidia-ml.so.1 lacks the NVML functions dlx reads", {}});
  CHECK(broken[0].verdict == Verdict::warn);
  CHECK_THAT(broken[0].advice, Contains("reinstall"));

  CHECK(check_gpu_metrics({"", {}})[0].verdict == Verdict::skipped);  // loads, lists nothing
}

TEST_CASE("GPU metrics: a GPU node lists its GPUs, and says which series its driver cannot give", "[doctor]") {
  const auto node = check_gpu_metrics({"", {"GPU-aaaa", "GPU-bbbb"}, true, true, true});
  REQUIRE(node.size() == 1);
  CHECK(node[0].verdict == Verdict::ok);
  CHECK(node[0].found == "NVML reads 2 GPUs: GPU-aaaa, GPU-bbbb");

  const auto old_driver = check_gpu_metrics({"", {"GPU-aaaa"}, true, false, true});
  CHECK(old_driver[0].verdict == Verdict::warn);
  CHECK_THAT(old_driver[0].found, Contains("1 GPU:") && Contains("lacks per-process utilisation"));
  CHECK_THAT(old_driver[0].found, !Contains("utilisation samples"));
}

TEST_CASE("GPU metrics: this host, read for real", "[doctor]") {
  const auto host = dlx::launch::gpu_host_facts();
  const auto findings = check_gpu_metrics({host.why_not, host.uuids, host.utilization_samples,
                                           host.process_utilization, host.process_list});
  REQUIRE(findings.size() == 1);
  if (host.why_not.empty()) {
    CHECK(findings[0].verdict != Verdict::fail);  // a GPU host (run by hand there)
  } else {
    CHECK(findings[0].verdict == Verdict::skipped);
    CHECK_THAT(findings[0].found, Contains("libnvidia-ml.so.1"));
  }
}
