// SPDX-License-Identifier: Apache-2.0
// The snapshot's multi-threaded host copy: every byte of every tensor lands in its destination,
// whatever the sizes (empty, odd, straddling the threads' slices), above and below the size at
// which it starts threads.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "dlx/common/usable_cpus.hpp"
#include "host_copy.hpp"

namespace {

using dlx::checkpoint::detail::copy_on_host;
using dlx::checkpoint::detail::host_copy_threads;
using dlx::checkpoint::detail::HostCopy;

void check_copies(const std::vector<std::size_t>& sizes) {
  std::mt19937 random(static_cast<std::uint32_t>(sizes.size()));
  std::vector<std::vector<std::byte>> sources, destinations;
  std::vector<HostCopy> copies;
  for (auto size : sizes) {
    auto& source = sources.emplace_back(size);
    for (auto& b : source) b = static_cast<std::byte>(random());
    auto& destination = destinations.emplace_back(size, std::byte{0});
    copies.push_back({destination.data(), source.data(), size});
  }
  copy_on_host(copies);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    INFO("tensor " << i << " of " << sizes[i] << " bytes");
    CHECK(destinations[i] == sources[i]);
  }
}

}  // namespace

TEST_CASE("snapshot copies: small snapshots stay on one thread, large ones use several",
          "[checkpoint]") {
  CHECK(host_copy_threads(0) == 1);
  CHECK(host_copy_threads((std::size_t{32} << 20) - 1) == 1);
  const auto large = host_copy_threads(std::size_t{1} << 30);
  CHECK(large >= 1);
  CHECK(large <= 4);
  CHECK(host_copy_threads(std::size_t{40} << 20) <= 5);  // at least 8 MiB per thread
}

TEST_CASE("snapshot copies: no more threads than the CPUs the process may use", "[checkpoint]") {
  // usable_cpus follows the affinity mask that a Slurm step's binding narrows (tests/unit).
  CHECK(host_copy_threads(std::size_t{1} << 30) == std::min(4u, dlx::usable_cpus()));
}

TEST_CASE("snapshot copies: every byte arrives, below and above the threaded size",
          "[checkpoint]") {
  check_copies({});
  check_copies({0});
  check_copies({1, 0, 4095, 4097, 12345});
  // 48 MiB in odd pieces, so the threads' 4 KiB-rounded slices cut through tensors.
  check_copies({(std::size_t{20} << 20) + 3, 0, 1, (std::size_t{17} << 20) + 4093,
                (std::size_t{11} << 20) + 7});
  check_copies({std::size_t{64} << 20});
}
