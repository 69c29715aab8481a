// SPDX-License-Identifier: Apache-2.0
#include "checkpoint_samples.hpp"

#include <cstring>

#include <hdf5.h>

namespace dlx::checkpoint::testing {

SampleContent::SampleContent(std::int64_t step, std::size_t big_elements) {
  auto& m = content_.metadata;
  m.experiment = "mnist-asha";
  m.trial_id = 7;
  m.step = step;
  m.epoch = 3;
  m.world_size = 4;
  m.hparams = {{"optim.lr", 0.01}, {"batch_size", 64}, {"arch", "résnet"}, {"amp", true}};
  m.metric_name = "val_loss";
  m.metric_value = 0.25;
  m.created_unix = 1700000000;
  content_.state = {{"data_cursor", std::int64_t{4800}},
                    {"samples_seen", std::int64_t{123456789012}},
                    {"lr_scale", 0.5},
                    {"note", std::string("warm restart")}};
  storage_.reserve(32);
  add("model/big", DType::float32, {big_elements}, 1);
  add("model/fc1/weight", DType::float32, {3, 4}, 2);
  add("model/fc1/bias", DType::float64, {4}, 3);
  add("model/half", DType::float16, {2, 3, 2}, 4);
  add("model/brain", DType::bfloat16, {5, 1, 2, 2}, 5);
  add("optimizer/step_count", DType::int64, {}, 6);
  add("optimizer/momentum", DType::float64, {3, 4}, 7);
  add("misc/i8", DType::int8, {7}, 8);
  add("misc/i16", DType::int16, {2, 2}, 9);
  add("misc/i32", DType::int32, {3}, 10);
  add("misc/u8", DType::uint8, {9}, 11);
  add("misc/u16", DType::uint16, {2}, 12);
  add("misc/u32", DType::uint32, {1, 1, 1}, 13);
  add("misc/u64", DType::uint64, {2}, 14);
  add("misc/empty", DType::float32, {0, 5}, 15);
  add("rng/rank-0/dropout", DType::uint64, {4}, 16);
}

void SampleContent::add(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                        std::uint8_t seed) {
  TensorView view{std::move(name), dtype, std::move(shape), nullptr};
  std::vector<std::byte> bytes(view.byte_size());
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<std::byte>((i * 131 + seed * 7) & 0xff);
  // 16-bit floats: keep the exponent away from all-ones so every value is finite.
  if (dtype == DType::float16 || dtype == DType::bfloat16)
    for (std::size_t i = 1; i < bytes.size(); i += 2) bytes[i] &= std::byte{0x3f};
  storage_.push_back(std::move(bytes));
  view.data = storage_.back().empty() ? nullptr : storage_.back().data();
  content_.tensors.push_back(std::move(view));
}

bool same_as(const CheckpointContent& content, const Checkpoint& loaded) {
  const auto &a = content.metadata, &b = loaded.metadata;
  if (a.experiment != b.experiment || a.trial_id != b.trial_id || a.step != b.step ||
      a.epoch != b.epoch || a.world_size != b.world_size || a.hparams != b.hparams ||
      a.metric_name != b.metric_name || a.metric_value != b.metric_value ||
      a.created_unix != b.created_unix || content.state != loaded.state ||
      content.tensors.size() != loaded.tensors.size())
    return false;
  for (const auto& view : content.tensors) {
    const auto* t = loaded.find(view.name);
    if (t == nullptr || t->dtype != view.dtype || t->shape != view.shape ||
        t->bytes.size() != view.byte_size())
      return false;
    if (view.byte_size() > 0 && std::memcmp(t->bytes.data(), view.data, view.byte_size()) != 0)
      return false;
  }
  return true;
}

std::size_t tensor_offset(const std::filesystem::path& path, const std::string& name) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  auto full = "/tensors/" + name;
  hid_t dataset = H5Dopen2(file, full.c_str(), H5P_DEFAULT);
  auto offset = H5Dget_offset(dataset);
  H5Dclose(dataset);
  H5Fclose(file);
  return static_cast<std::size_t>(offset);
}

}  // namespace dlx::checkpoint::testing
