// SPDX-License-Identifier: Apache-2.0
#pragma once
// Copies tensors into library-owned host memory: memcpy for host tensors, one CUDA stream of
// device-to-host copies into pinned memory for device tensors. Buffers of `reuse` whose size
// fits are recycled (no page faults on the next snapshot of the same model).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpoint/tensor.hpp"

namespace dlx::checkpoint::detail {

std::vector<Tensor> snapshot_tensors(std::span<const TensorView> views, std::vector<Tensor> reuse);

// Throws CheckpointError for an empty or malformed name, a duplicate name, or missing data.
void validate_tensors(std::span<const TensorView> views);

// `name` as a message can show it: each NUL byte as \0 (a raw one would end the message there).
std::string name_for_message(std::string_view name);

// save_checkpoint for tensors that are already host snapshots (checkpoint_save.cpp).
void save_snapshot(const CheckpointContent& content, const std::vector<Tensor>& tensors,
                   const std::filesystem::path& path);

}  // namespace dlx::checkpoint::detail
