// SPDX-License-Identifier: Apache-2.0
// The C API's checkpoints (dlx/c_api.h, "Checkpoints"): save named host tensors and small state
// through Trial::save_checkpoint, and resume the checkpoint Trial::resume chooses, handed to C as
// a dlx_checkpoint that owns the verified bytes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "c_api_support.hpp"
#include "dlx/c_api.h"
#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/checkpointing.hpp"

namespace dlx::c_api {
// One tensor as the C API lists it: held by the library, or deferred (its bytes in the file).
struct CheckpointEntry {
  const std::string* name = nullptr;
  std::string dtype;  // its name
  const std::vector<std::uint64_t>* shape = nullptr;
  const void* data = nullptr;  // null when deferred; device memory when on_device
  std::size_t bytes = 0;
  bool deferred = false;
  bool on_device = false;  // read into the caller's device memory (place_on_device)
};
}  // namespace dlx::c_api

struct dlx_checkpoint {
  dlx::ResumedState resumed;
  std::string path, state_json;
  std::vector<dlx::c_api::CheckpointEntry> entries;  // held and deferred tensors, in name order
};

namespace {

using dlx::c_api::guarded;
using dlx::c_api::InvalidArgument;
using dlx::c_api::need;
using dlx::c_api::text;

std::vector<dlx::checkpoint::TensorView> views_of(const dlx_named_tensor* tensors, std::size_t count) {
  if (count > 0 && tensors == nullptr) throw InvalidArgument("dlx: tensors is NULL");
  std::vector<dlx::checkpoint::TensorView> views;
  for (std::size_t i = 0; i < count; ++i) {
    const auto& t = tensors[i];
    const std::string name = text(t.name, "a tensor's name");
    const auto dtype = dlx::checkpoint::dtype_from_name(text(t.dtype, "a tensor's dtype"));
    if (!dtype) {
      throw InvalidArgument(fmt::format(
          "dlx: tensor '{}' has dtype '{}', which a checkpoint cannot hold (use float32, float64, "
          "float16, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32 or uint64)",
          name, t.dtype));
    }
    if (t.rank > 0 && t.shape == nullptr) {
      throw InvalidArgument(fmt::format("dlx: tensor '{}' has rank {} but no shape", name, t.rank));
    }
    dlx::checkpoint::TensorView view{name, *dtype, {}, t.data};
    if (t.rank > 0) view.shape.assign(t.shape, t.shape + t.rank);
    views.push_back(std::move(view));
  }
  return views;
}

// The small state from a JSON object; its integer "data_cursor" is the data cursor.
dlx::checkpoint::StateMap state_of(const char* json, std::int64_t& data_cursor) {
  dlx::checkpoint::StateMap state;
  if (json == nullptr || *json == '\0') return state;
  const auto parsed = nlohmann::json::parse(json, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw InvalidArgument("dlx: the checkpoint state is not a JSON object (give {\"name\": value, ...} "
                          "of numbers and strings)");
  }
  for (const auto& [name, value] : parsed.items()) {
    if (value.is_boolean()) {
      state[name] = std::int64_t{value.get<bool>() ? 1 : 0};
    } else if (value.is_number_integer()) {
      state[name] = value.get<std::int64_t>();
    } else if (value.is_number()) {
      state[name] = value.get<double>();
    } else if (value.is_string()) {
      state[name] = value.get<std::string>();
    } else {
      throw InvalidArgument(fmt::format("dlx: checkpoint state value '{}' is {}: only numbers, "
                                        "booleans and strings are small state (save arrays as "
                                        "tensors)", name, value.type_name()));
    }
  }
  if (auto cursor = state.find("data_cursor"); cursor != state.end()) {
    const auto* value = std::get_if<std::int64_t>(&cursor->second);
    if (!value) throw InvalidArgument("dlx: checkpoint state 'data_cursor' must be an integer");
    data_cursor = *value;
    state.erase(cursor);
  }
  return state;
}

std::string state_json_of(const dlx::checkpoint::StateMap& state) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, value] : state) {
    std::visit([&, &key = name](const auto& v) { out[key] = v; }, value);
  }
  return out.dump();
}

const dlx_checkpoint& checked(const dlx_checkpoint* checkpoint) {
  return need(checkpoint, "checkpoint");
}

}  // namespace

extern "C" {

dlx_status dlx_trial_save_checkpoint(dlx_trial* t, int64_t step, int64_t epoch,
                                     const dlx_named_tensor* tensors, size_t count,
                                     const char* state_json, double metric) {
  // Host tensors only: the device form with no tensor flagged.
  return dlx_trial_save_checkpoint_device(t, step, epoch, tensors, nullptr, count, nullptr, state_json,
                                          metric);
}

dlx_status dlx_trial_save_checkpoint_device(dlx_trial* t, int64_t step, int64_t epoch,
                                            const dlx_named_tensor* tensors,
                                            const unsigned char* on_device, size_t count,
                                            void* cuda_stream, const char* state_json,
                                            double metric) {
  // Any non-zero on_device[i] is "on the device"; the flagged form reads bits.
  std::vector<unsigned char> flags;
  if (on_device != nullptr) {
    flags.reserve(count);
    for (std::size_t i = 0; i < count; ++i) flags.push_back(on_device[i] != 0 ? DLX_TENSOR_ON_DEVICE : 0);
  }
  return dlx_trial_save_checkpoint_flagged(t, step, epoch, tensors,
                                           on_device != nullptr ? flags.data() : nullptr, count,
                                           cuda_stream, state_json, metric);
}

dlx_status dlx_trial_save_checkpoint_flagged(dlx_trial* t, int64_t step, int64_t epoch,
                                             const dlx_named_tensor* tensors,
                                             const unsigned char* flags, size_t count,
                                             void* cuda_stream, const char* state_json,
                                             double metric) {
  return guarded([&] {
    auto& trial = *need(t, "trial").trial;
    dlx::TrainingState state;
    state.step = step;
    state.epoch = epoch;
    state.tensors = views_of(tensors, count);
    constexpr unsigned kKnown = DLX_TENSOR_ON_DEVICE | DLX_TENSOR_SNAPSHOT_IN_BACKGROUND;
    for (std::size_t i = 0; flags != nullptr && i < count; ++i) {
      if ((flags[i] & ~kKnown) != 0)
        throw InvalidArgument(fmt::format(
            "dlx_trial_save_checkpoint_flagged: tensor {} ('{}') has flags {:#x}; the flags are "
            "DLX_TENSOR_ON_DEVICE (1) and DLX_TENSOR_SNAPSHOT_IN_BACKGROUND (2)",
            i, state.tensors[i].name, static_cast<unsigned>(flags[i])));
      if ((flags[i] & DLX_TENSOR_ON_DEVICE) != 0)
        state.tensors[i].location = dlx::checkpoint::MemoryLocation::cuda_device;
      state.tensors[i].snapshot_in_background = (flags[i] & DLX_TENSOR_SNAPSHOT_IN_BACKGROUND) != 0;
    }
    state.cuda_stream = cuda_stream;  // the device tensors' copies are ordered after its work
    state.state = state_of(state_json, state.data_cursor);
    if (!std::isnan(metric)) state.metric = metric;
    trial.save_checkpoint(state);
  });
}

dlx_status dlx_trial_wait_for_snapshot(dlx_trial* t) {
  return guarded([&] { need(t, "trial").trial->wait_for_snapshot(); });
}

dlx_status dlx_trial_withdraw_checkpoint(dlx_trial* t, int64_t step, int* withdrawn) {
  return guarded([&] {
    auto& trial = *need(t, "trial").trial;
    auto& out = need(withdrawn, "withdrawn");
    out = trial.withdraw_checkpoint(step) ? 1 : 0;
  });
}

dlx_status dlx_trial_wait_for_checkpoint(dlx_trial* t, double timeout_seconds, int* finished) {
  return guarded([&] {
    auto& trial = *need(t, "trial").trial;
    auto& out = need(finished, "finished");
    const auto limit = timeout_seconds < 0
                           ? std::chrono::steady_clock::duration::max()
                           : std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(timeout_seconds));
    out = trial.wait_for_checkpoint(limit) ? 1 : 0;
  });
}

namespace {

dlx_checkpoint* handle_of(dlx::ResumedState resumed) {
  auto path = resumed.path().string();
  auto state = state_json_of(resumed.checkpoint().state);  // data_cursor included
  auto handle = std::make_unique<dlx_checkpoint>(
      dlx_checkpoint{std::move(resumed), std::move(path), std::move(state), {}});
  const auto& checkpoint = handle->resumed.checkpoint();
  for (const auto& tensor : checkpoint.tensors) {
    handle->entries.push_back({&tensor.name, std::string(dlx::checkpoint::dtype_name(tensor.dtype)), &tensor.shape,
                               tensor.bytes.data(), tensor.bytes.size(), false});
  }
  for (const auto& tensor : checkpoint.deferred) {
    handle->entries.push_back({&tensor.name, std::string(dlx::checkpoint::dtype_name(tensor.dtype)), &tensor.shape,
                               nullptr, static_cast<std::size_t>(tensor.bytes), true});
  }
  for (const auto& tensor : checkpoint.on_device) {
    handle->entries.push_back({&tensor.info.name,
                               std::string(dlx::checkpoint::dtype_name(tensor.info.dtype)),
                               &tensor.info.shape, tensor.data,
                               static_cast<std::size_t>(tensor.info.bytes), false, true});
  }
  std::sort(handle->entries.begin(), handle->entries.end(),
            [](const auto& a, const auto& b) { return *a.name < *b.name; });
  return handle.release();
}

dlx_status resume_into(dlx_trial* t, dlx_checkpoint** out, dlx::Trial::RankStateRule ranks,
                       const dlx::checkpoint::Deferral& defer = {}) {
  return guarded([&] {
    need(out, "out") = nullptr;
    auto resumed = need(t, "trial").trial->resume(ranks, defer);
    if (resumed) *out = handle_of(std::move(*resumed));
  });
}

const dlx::c_api::CheckpointEntry& entry_at(const dlx_checkpoint* c, size_t index) {
  const auto& entries = checked(c).entries;
  if (index >= entries.size()) {
    throw InvalidArgument(fmt::format("dlx: tensor index {} is out of range (the checkpoint "
                                      "has {} tensors)", index, entries.size()));
  }
  return entries[index];
}

}  // namespace

dlx_status dlx_checkpoint_open(dlx_trial* t, const char* path, dlx_checkpoint** out) {
  return guarded([&] {
    need(out, "out") = nullptr;
    const auto& trial = *need(t, "trial").trial;
    const std::filesystem::path file = text(path, "path");
    *out = handle_of(dlx::ResumedState(dlx::checkpoint::load_checkpoint(file), file, trial.rank()));
  });
}

dlx_status dlx_trial_note_resumed(dlx_trial* t, const dlx_checkpoint* c) {
  return guarded([&] { need(t, "trial").trial->note_resumed_from(checked(c).resumed); });
}

dlx_status dlx_trial_resume(dlx_trial* t, dlx_checkpoint** out) {
  return resume_into(t, out, dlx::Trial::RankStateRule::refuse_other_world_size);
}

dlx_status dlx_trial_resume_any_world_size(dlx_trial* t, dlx_checkpoint** out) {
  return resume_into(t, out, dlx::Trial::RankStateRule::caller_checks);
}

dlx_status dlx_trial_resume_deferring(dlx_trial* t, int any_world_size, const char* const* prefixes,
                                      size_t count, dlx_checkpoint** out) {
  return dlx_trial_resume_placing(t, any_world_size, prefixes, count, nullptr, nullptr, out);
}

dlx_status dlx_trial_resume_placing(dlx_trial* t, int any_world_size, const char* const* prefixes,
                                    size_t count, dlx_place_fn place, void* context,
                                    dlx_checkpoint** out) {
  return dlx_trial_resume_placing_on_device(t, any_world_size, prefixes, count, place, nullptr,
                                            context, out);
}

dlx_status dlx_trial_resume_placing_on_device(dlx_trial* t, int any_world_size,
                                              const char* const* prefixes, size_t count,
                                              dlx_place_fn place, dlx_place_fn place_on_device,
                                              void* context, dlx_checkpoint** out) {
  dlx::checkpoint::Deferral defer;
  const auto status = guarded([&] {
    if (count > 0) need(prefixes, "prefixes");
    for (size_t i = 0; i < count; ++i) defer.prefixes.emplace_back(text(prefixes[i], "prefix"));
  });
  if (status != DLX_OK) return status;
  if (place != nullptr) {
    defer.place = [place, context](const dlx::checkpoint::TensorInfo& info) {
      const std::string dtype(dlx::checkpoint::dtype_name(info.dtype));
      return static_cast<std::byte*>(place(context, info.name.c_str(), dtype.c_str(),
                                           info.shape.data(), info.shape.size(), info.bytes));
    };
  }
  if (place_on_device != nullptr) {
    defer.place_on_device = [place_on_device, context](const dlx::checkpoint::TensorInfo& info) {
      const std::string dtype(dlx::checkpoint::dtype_name(info.dtype));
      return place_on_device(context, info.name.c_str(), dtype.c_str(), info.shape.data(),
                             info.shape.size(), info.bytes);
    };
  }
  return resume_into(t, out,
                     any_world_size != 0 ? dlx::Trial::RankStateRule::caller_checks
                                         : dlx::Trial::RankStateRule::refuse_other_world_size,
                     defer);
}

void dlx_checkpoint_destroy(dlx_checkpoint* checkpoint) {
  static_cast<void>(guarded([&] { delete checkpoint; }));
}

dlx_status dlx_checkpoint_step(const dlx_checkpoint* c, int64_t* out) {
  return guarded([&] { need(out, "out") = checked(c).resumed.step(); });
}
dlx_status dlx_checkpoint_world_size(const dlx_checkpoint* c, int64_t* out) {
  return guarded([&] { need(out, "out") = checked(c).resumed.checkpoint().metadata.world_size; });
}
dlx_status dlx_checkpoint_epoch(const dlx_checkpoint* c, int64_t* out) {
  return guarded([&] { need(out, "out") = checked(c).resumed.epoch(); });
}
dlx_status dlx_checkpoint_path(const dlx_checkpoint* c, const char** out) {
  return guarded([&] { need(out, "out") = checked(c).path.c_str(); });
}
dlx_status dlx_checkpoint_state_json(const dlx_checkpoint* c, const char** out) {
  return guarded([&] { need(out, "out") = checked(c).state_json.c_str(); });
}
dlx_status dlx_checkpoint_tensor_count(const dlx_checkpoint* c, size_t* out) {
  return guarded([&] { need(out, "out") = checked(c).entries.size(); });
}

dlx_status dlx_checkpoint_tensor(const dlx_checkpoint* c, size_t index, const char** name,
                                 const char** dtype, const uint64_t** shape, size_t* rank,
                                 const void** data, size_t* bytes) {
  return guarded([&] {
    const auto& entry = entry_at(c, index);
    need(name, "name") = entry.name->c_str();
    need(dtype, "dtype") = entry.dtype.c_str();
    need(shape, "shape") = entry.shape->data();
    need(rank, "rank") = entry.shape->size();
    need(data, "data") = entry.data;
    need(bytes, "bytes") = entry.bytes;
  });
}

dlx_status dlx_checkpoint_tensor_deferred(const dlx_checkpoint* c, size_t index, int* out) {
  return guarded([&] { need(out, "out") = entry_at(c, index).deferred ? 1 : 0; });
}

dlx_status dlx_checkpoint_tensor_on_device(const dlx_checkpoint* c, size_t index, int* out) {
  return guarded([&] { need(out, "out") = entry_at(c, index).on_device ? 1 : 0; });
}

dlx_status dlx_checkpoint_read_tensor(const dlx_checkpoint* c, size_t index, void* destination,
                                      size_t bytes) {
  return guarded([&] {
    const auto& entry = entry_at(c, index);
    if (bytes != entry.bytes) {
      throw InvalidArgument(fmt::format("dlx: tensor '{}' is {} bytes; the destination given for it is {}",
                                        *entry.name, entry.bytes, bytes));
    }
    if (bytes == 0) return;
    if (destination == nullptr) throw InvalidArgument("dlx: destination is NULL");
    auto* out = static_cast<std::byte*>(destination);
    if (entry.on_device) {
      throw InvalidArgument(fmt::format("dlx: tensor '{}' was read into device memory (the "
                                        "place_on_device of the resume); its bytes are there, "
                                        "at the address dlx_checkpoint_tensor gives", *entry.name));
    }
    if (!entry.deferred) {
      std::memcpy(out, entry.data, bytes);
      return;
    }
    c->resumed.checkpoint().read_into(*entry.name, {out, bytes});
  });
}

dlx_status dlx_checkpoint_read_tensors(const dlx_checkpoint* c, size_t count, const size_t* indices,
                                       void* const* destinations, const size_t* bytes) {
  return guarded([&] {
    if (count == 0) return;
    need(indices, "indices");
    need(destinations, "destinations");
    need(bytes, "bytes");
    std::vector<dlx::checkpoint::Checkpoint::DeferredRead> deferred;
    std::vector<std::pair<const std::byte*, std::span<std::byte>>> held;  // from, to
    for (size_t i = 0; i < count; ++i) {
      const auto& entry = entry_at(c, indices[i]);
      if (bytes[i] != entry.bytes) {
        throw InvalidArgument(fmt::format("dlx: tensor '{}' is {} bytes; destinations[{}] is given {}",
                                          *entry.name, entry.bytes, i, bytes[i]));
      }
      if (bytes[i] == 0) continue;
      if (destinations[i] == nullptr) throw InvalidArgument(fmt::format("dlx: destinations[{}] is NULL", i));
      if (entry.on_device) {
        throw InvalidArgument(fmt::format("dlx: tensor '{}' was read into device memory (the "
                                          "place_on_device of the resume); its bytes are there, "
                                          "at the address dlx_checkpoint_tensor gives", *entry.name));
      }
      const std::span<std::byte> out(static_cast<std::byte*>(destinations[i]), bytes[i]);
      if (entry.deferred) {
        deferred.push_back({*entry.name, out});
      } else {
        held.emplace_back(static_cast<const std::byte*>(entry.data), out);
      }
    }
    for (const auto& [from, to] : held) std::memcpy(to.data(), from, to.size());
    c->resumed.checkpoint().read_into(deferred);
  });
}

}  // extern "C"
