// SPDX-License-Identifier: Apache-2.0
// plan_buckets: which tensors share a fusion buffer (pure; the MPI tests check the sums).
#include <catch2/catch.hpp>

#include <vector>

#include "dlx/comm/fused_allreduce.hpp"

using dlx::comm::Bucket;
using dlx::comm::DataType;
using dlx::comm::plan_buckets;
using dlx::comm::Tensor;

namespace {

std::vector<std::pair<std::size_t, std::size_t>> ranges(const std::vector<Bucket>& buckets) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const auto& b : buckets) out.emplace_back(b.first, b.last);
  return out;
}

Tensor f32(std::size_t count) { return Tensor{nullptr, count, DataType::float32}; }
Tensor f64(std::size_t count) { return Tensor{nullptr, count, DataType::float64}; }

}  // namespace

TEST_CASE("consecutive tensors fill a bucket up to its size, boundaries included") {
  const std::vector<Tensor> list{f32(4), f32(4), f32(4), f32(4)};  // 16 bytes each
  CHECK(ranges(plan_buckets(list, 64)) == decltype(ranges({})){{0, 4}});
  CHECK(ranges(plan_buckets(list, 63)) == decltype(ranges({})){{0, 3}, {3, 4}});
  CHECK(ranges(plan_buckets(list, 32)) == decltype(ranges({})){{0, 2}, {2, 4}});
  CHECK(ranges(plan_buckets(list, 33)) == decltype(ranges({})){{0, 2}, {2, 4}});
  CHECK(ranges(plan_buckets(list, 0)) == decltype(ranges({})){{0, 1}, {1, 2}, {2, 3}, {3, 4}});
  CHECK(plan_buckets(list, 64).front().bytes == 64);
}

TEST_CASE("a tensor larger than the bucket is a bucket of its own") {
  const std::vector<Tensor> list{f32(1), f32(100), f32(1), f32(1)};
  CHECK(ranges(plan_buckets(list, 16)) == decltype(ranges({})){{0, 1}, {1, 2}, {2, 4}});
}

TEST_CASE("element types are never mixed in one bucket") {
  const std::vector<Tensor> list{f32(2), f64(1), f64(1), f32(2)};
  CHECK(ranges(plan_buckets(list, 1 << 20)) == decltype(ranges({})){{0, 1}, {1, 3}, {3, 4}});
}

TEST_CASE("empty tensors need no bucket") {
  CHECK(plan_buckets(std::vector<Tensor>{f32(0), f32(0)}, 64).empty());
  const std::vector<Tensor> list{f32(0), f32(2), f32(0), f32(2)};
  CHECK(ranges(plan_buckets(list, 64)) == decltype(ranges({})){{1, 4}});
  CHECK(plan_buckets(std::vector<Tensor>{}, 64).empty());
}

TEST_CASE("a tensor of alone_bytes or more is reduced alone and closes the bucket before it") {
  const std::vector<Tensor> list{f32(1), f32(1), f32(8), f32(1), f32(1)};  // 4, 4, 32, 4, 4 bytes
  CHECK(ranges(plan_buckets(list, 1 << 20, 32)) == decltype(ranges({})){{0, 2}, {2, 3}, {3, 5}});
  CHECK(ranges(plan_buckets(list, 1 << 20, 33)) == decltype(ranges({})){{0, 5}});
  // Two large tensors in a row: never fused with each other.
  const std::vector<Tensor> large{f32(8), f32(8)};
  CHECK(ranges(plan_buckets(large, 1 << 20, 32)) == decltype(ranges({})){{0, 1}, {1, 2}});
  CHECK(ranges(plan_buckets(large, 1 << 20, 0)) == decltype(ranges({})){{0, 1}, {1, 2}});
}

TEST_CASE("the default keeps 16 KiB tensors fused and reduces 256 KiB ones alone") {
  const std::vector<Tensor> small(4, f32(4096));    // 16 KiB
  const std::vector<Tensor> big(4, f32(65536));     // 256 KiB
  CHECK(plan_buckets(small, dlx::comm::kDefaultBucketBytes).size() == 1);
  CHECK(plan_buckets(big, dlx::comm::kDefaultBucketBytes).size() == 4);
}
