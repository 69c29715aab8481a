// SPDX-License-Identifier: Apache-2.0
#include "dlx/comm/fused_allreduce.hpp"

#include <algorithm>
#include <exception>

#include "bucket_packing.hpp"

namespace dlx::comm {

std::vector<Bucket> plan_buckets(std::span<const Tensor> tensors, std::size_t bucket_bytes,
                                 std::size_t alone_bytes) {
  std::vector<Bucket> buckets;
  bool open = false;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& tensor = tensors[i];
    if (tensor.count == 0) {
      if (open) buckets.back().last = i + 1;  // skipped when packing (no bytes)
      continue;
    }
    const bool alone = tensor.bytes() >= alone_bytes;
    const auto joins = [&](const Bucket& bucket) {
      const Tensor& first = tensors[bucket.first];
      return first.type == tensor.type && first.memory == tensor.memory &&
             bucket.bytes + tensor.bytes() <= bucket_bytes;
    };
    const bool fits = open && !alone && joins(buckets.back());
    if (fits) {
      buckets.back().last = i + 1;
      buckets.back().bytes += tensor.bytes();
    } else {
      buckets.push_back(Bucket{i, i + 1, tensor.bytes()});
      open = !alone;  // nothing joins a tensor reduced alone
    }
  }
  return buckets;
}

FusedAllreduce::FusedAllreduce(Communicator& comm, std::size_t bucket_bytes, std::size_t alone_bytes)
    : comm_(comm), bucket_bytes_(bucket_bytes), alone_bytes_(alone_bytes) {}

std::size_t FusedAllreduce::alone_limit() const noexcept {
  return comm_.sums_buckets() ? kSharedMemoryAloneBytes : alone_bytes_;
}

bool FusedAllreduce::summed_by_backend(Memory memory, std::size_t tensors,
                                       std::size_t bytes) const noexcept {
  // Device buckets always: only the backend can copy device memory (or refuse it, with why).
  if (memory == Memory::cuda_device) return true;
  // A bucket of one tensor goes there too (it beats the in-place call below alone_limit()).
  return comm_.sums_buckets() && bytes <= bucket_bytes_ && (tensors > 1 || bytes < alone_limit());
}

std::vector<std::byte>& FusedAllreduce::buffer(std::size_t index, std::size_t bytes) {
  if (buffers_.size() <= index) buffers_.resize(index + 1);
  if (buffers_[index].size() < bytes) buffers_[index].resize(bytes);
  return buffers_[index];
}

void FusedAllreduce::allreduce_sum(std::span<const Tensor> tensors) {
  if (detail::any_on_device(tensors)) comm_.require_device_memory();  // before any tensor is summed
  // Device buckets are all enqueued before the host waits for the first (one wait per call).
  std::vector<AllreduceHandle> on_device;
  for (const Bucket& bucket : plan_buckets(tensors, bucket_bytes_, alone_limit())) {
    const auto members = tensors.subspan(bucket.first, bucket.last - bucket.first);
    if (members.front().on_device()) {
      on_device.push_back(
          comm_.allreduce_sum_bucket_async(std::vector<Tensor>(members.begin(), members.end())));
      continue;
    }
    if (summed_by_backend(members.front().memory, members.size(), bucket.bytes)) {
      comm_.allreduce_sum_bucket(members);
      continue;
    }
    if (members.size() == 1) {
      comm_.allreduce_sum(members.front());
      continue;
    }
    auto& fusion = buffer(0, bucket.bytes);
    detail::pack(members, fusion.data());
    const DataType type = tensors[bucket.first].type;
    comm_.allreduce_sum(Tensor{fusion.data(), bucket.bytes / size_of(type), type});
    detail::unpack(fusion.data(), members);
  }
  std::exception_ptr first_error;
  for (auto& handle : on_device) {
    try {
      handle.wait();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

void FusedAllreduce::add(Tensor tensor) {
  if (tensor.on_device()) comm_.require_device_memory();
  if (tensor.count == 0) return;
  // Its own bucket, started at once: from alone_limit() on as plan_buckets does; and from
  // alone_bytes_ on also through the backend's buckets, so that a large gradient does not wait
  // for the next layer's backward compute to fill the bucket (overlap: a shorter tail).
  if (tensor.bytes() >= std::min(alone_bytes_, alone_limit())) {
    flush();
    open_.push_back(tensor);
    open_bytes_ = tensor.bytes();
    flush();
    return;
  }
  const bool fits = !open_.empty() && open_.front().type == tensor.type &&
                    open_.front().memory == tensor.memory &&
                    open_bytes_ + tensor.bytes() <= bucket_bytes_;
  if (!fits) flush();
  open_.push_back(tensor);
  open_bytes_ += tensor.bytes();
}

void FusedAllreduce::flush() {
  if (open_.empty()) return;
  InFlight flight;
  flight.tensors = std::move(open_);
  open_.clear();
  const std::size_t bytes = open_bytes_;
  open_bytes_ = 0;
  const DataType type = flight.tensors.front().type;
  // the backend moves the tensors itself
  if (summed_by_backend(flight.tensors.front().memory, flight.tensors.size(), bytes)) {
    flight.handle = comm_.allreduce_sum_bucket_async(std::move(flight.tensors));
    flight.tensors.clear();
  } else if (flight.tensors.size() == 1) {
    flight.handle = comm_.allreduce_sum_async(flight.tensors.front());
  } else {
    flight.fused = true;
    flight.buffer = in_flight_.size();
    auto& fusion = buffer(flight.buffer, bytes);
    detail::pack(flight.tensors, fusion.data());
    flight.handle = comm_.allreduce_sum_async(Tensor{fusion.data(), bytes / size_of(type), type});
  }
  in_flight_.push_back(std::move(flight));
}

void FusedAllreduce::synchronize() {
  flush();
  std::exception_ptr first_error;
  for (auto& flight : in_flight_) {
    try {
      flight.handle.wait();
      if (flight.fused) detail::unpack(buffers_[flight.buffer].data(), flight.tensors);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  in_flight_.clear();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace dlx::comm
