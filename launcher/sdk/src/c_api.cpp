// SPDX-License-Identifier: Apache-2.0
// The C API (dlx/c_api.h) over dlx::Trial. Every entry point runs its body through `guarded`
// (c_api_support.hpp), which turns each exception type into a status and keeps the message for
// dlx_last_error(): no exception crosses into C. Checkpoints: c_api_checkpoint.cpp.
#include "dlx/c_api.h"

#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dlx/comm/comm_error.hpp"
#include "dlx/comm/fused_allreduce.hpp"
#include "dlx/config/hparam_tree.hpp"
#include "dlx/env/environment.hpp"
#include "dlx/trial.hpp"
#include "c_api_support.hpp"

struct dlx_request {
  std::unique_ptr<dlx::comm::FusedAllreduce> fused;
};

namespace {

using dlx::c_api::guarded;
using dlx::c_api::InvalidArgument;
using dlx::c_api::need;
using dlx::c_api::text;

std::vector<dlx::comm::Tensor> tensors_of(const dlx_tensor* tensors, std::size_t count,
                                          dlx::comm::Memory memory = dlx::comm::Memory::host) {
  if (count > 0 && tensors == nullptr) throw InvalidArgument("dlx: tensors is NULL");
  std::vector<dlx::comm::Tensor> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto& t = tensors[i];
    if (t.dtype < DLX_FLOAT32 || t.dtype > DLX_UINT64) {
      throw InvalidArgument("dlx: tensor " + std::to_string(i) + " has unknown dtype " +
                            std::to_string(t.dtype));
    }
    if (t.data == nullptr && t.count > 0) {
      throw InvalidArgument("dlx: tensor " + std::to_string(i) + " has no data");
    }
    out.push_back({t.data, t.count, static_cast<dlx::comm::DataType>(t.dtype), memory});
  }
  return out;
}

dlx::Metrics metrics_of(const char* const* names, const double* values, std::size_t count) {
  if (count > 0 && (names == nullptr || values == nullptr)) {
    throw InvalidArgument("dlx: metric names or values is NULL");
  }
  dlx::Metrics metrics;
  for (std::size_t i = 0; i < count; ++i) metrics[text(names[i], "a metric name")] = values[i];
  return metrics;
}

// A set of names dlx_trial_metric_names handed out.
const dlx::MetricNames& registered(dlx_trial& handle, uint32_t names) {
  if (names >= handle.metric_names.size())
    throw InvalidArgument(fmt::format("dlx: metric names {} were not registered (dlx_trial_metric_names gave "
                                      "0 to {})", names, handle.metric_names.size()));
  return handle.metric_names[names];
}

std::span<const double> values_of(const dlx::MetricNames& names, const double* values) {
  if (names.size() > 0 && values == nullptr) throw InvalidArgument("dlx: metric values is NULL");
  return {values, names.size()};
}

std::string path_or_empty(const std::optional<std::filesystem::path>& path) {
  return path ? path->string() : std::string();
}

// dlx_trial_allreduce_async and its device form: a request holding the fused sum's buckets.
void start_allreduce(dlx_trial* t, const std::vector<dlx::comm::Tensor>& list, dlx_request** out) {
  auto& trial = *need(t, "trial").trial;
  auto request = std::make_unique<dlx_request>();
  request->fused = std::make_unique<dlx::comm::FusedAllreduce>(
      trial.communicator(), trial.fused_allreduce().bucket_bytes());
  for (const auto& tensor : list) request->fused->add(tensor);
  request->fused->flush();
  *out = request.release();
}

}  // namespace

extern "C" {

const char* dlx_last_error(void) { return dlx::c_api::last_error().c_str(); }

dlx_status dlx_trial_create(unsigned flags, dlx_trial** out) {
  return guarded([&] {
    need(out, "out") = nullptr;
    dlx::TrialOptions options;
    options.communicator = (flags & DLX_TRIAL_NO_COMMUNICATOR) == 0;
    options.announce_backend = (flags & DLX_TRIAL_QUIET) == 0;
    auto handle = std::make_unique<dlx_trial>();
    handle->trial = std::make_unique<dlx::Trial>(options);
    const auto& trial = *handle->trial;
    // values(): nothing counts as read until the program asks for them (below).
    handle->hparams_json = dlx::config::flatten_hyperparameters(trial.hparams().values()).dump();
    handle->nested_hparams_json = trial.hparams().values().dump();
    handle->experiment_dir = path_or_empty(trial.environment().experiment_dir);
    handle->checkpoint_dir = path_or_empty(trial.checkpoint_dir());
    handle->latest_checkpoint = path_or_empty(trial.latest_checkpoint());
    *out = handle.release();
  });
}

void dlx_trial_destroy(dlx_trial* trial) {
  static_cast<void>(guarded([&] { delete trial; }));
}

dlx_status dlx_trial_rank(const dlx_trial* t, int* out) {
  return guarded([&] { need(out, "out") = need(t, "trial").trial->rank(); });
}
dlx_status dlx_trial_size(const dlx_trial* t, int* out) {
  return guarded([&] { need(out, "out") = need(t, "trial").trial->size(); });
}
dlx_status dlx_trial_local_rank(const dlx_trial* t, int* out) {
  return guarded([&] { need(out, "out") = need(t, "trial").trial->local_rank(); });
}
dlx_status dlx_trial_in_trial(const dlx_trial* t, int* out) {
  return guarded([&] { need(out, "out") = need(t, "trial").trial->in_trial() ? 1 : 0; });
}
dlx_status dlx_trial_id(const dlx_trial* t, int64_t* out) {
  return guarded([&] { need(out, "out") = need(t, "trial").trial->id(); });
}
dlx_status dlx_trial_experiment_dir(const dlx_trial* t, const char** out) {
  return guarded([&] { need(out, "out") = need(t, "trial").experiment_dir.c_str(); });
}
dlx_status dlx_trial_checkpoint_dir(const dlx_trial* t, const char** out) {
  return guarded([&] { need(out, "out") = need(t, "trial").checkpoint_dir.c_str(); });
}
dlx_status dlx_trial_latest_checkpoint(const dlx_trial* t, const char** out) {
  return guarded([&] { need(out, "out") = need(t, "trial").latest_checkpoint.c_str(); });
}
dlx_status dlx_trial_hparam_warning(dlx_trial* t, const char* kind, const char* name, const char* message) {
  return guarded([&] {
    need(t, "trial").trial->record_hparam_warning(text(kind, "kind"), text(name, "name"), text(message, "message"));
  });
}

// The whole set: every name counts as read for the library's own check (json()); a binding
// that checks its reads itself (the Python package) reports its warnings through
// dlx_trial_hparam_warning.
dlx_status dlx_trial_hparams_json(const dlx_trial* t, const char** out) {
  return guarded([&] {
    need(t, "trial").trial->hparams().json();
    need(out, "out") = t->hparams_json.c_str();
  });
}
dlx_status dlx_trial_hparams_nested_json(const dlx_trial* t, const char** out) {
  return guarded([&] {
    need(t, "trial").trial->hparams().json();
    need(out, "out") = t->nested_hparams_json.c_str();
  });
}
dlx_status dlx_trial_hparam_json(const dlx_trial* t, const char* name, const char** out) {
  return guarded([&] {
    auto& handle = const_cast<dlx_trial&>(need(t, "trial"));
    need(out, "out");
    handle.strings.push_back(
        handle.trial->hparam<nlohmann::ordered_json>(text(name, "name")).dump());
    *out = handle.strings.back().c_str();
  });
}

dlx_status dlx_trial_hparam_double(const dlx_trial* t, const char* name, double* out) {
  return guarded([&] {
    need(out, "out") = need(t, "trial").trial->hparam<double>(text(name, "name"));
  });
}
dlx_status dlx_trial_hparam_int64(const dlx_trial* t, const char* name, int64_t* out) {
  return guarded([&] {
    need(out, "out") = need(t, "trial").trial->hparam<std::int64_t>(text(name, "name"));
  });
}
dlx_status dlx_trial_hparam_bool(const dlx_trial* t, const char* name, int* out) {
  return guarded([&] {
    need(out, "out") = need(t, "trial").trial->hparam<bool>(text(name, "name")) ? 1 : 0;
  });
}
dlx_status dlx_trial_hparam_string(const dlx_trial* t, const char* name, const char** out) {
  return guarded([&] {
    auto& handle = const_cast<dlx_trial&>(need(t, "trial"));
    need(out, "out");
    handle.strings.push_back(handle.trial->hparam<std::string>(text(name, "name")));
    *out = handle.strings.back().c_str();
  });
}

dlx_status dlx_trial_report_training(dlx_trial* t, int64_t step, const char* const* names,
                                     const double* values, size_t count) {
  return guarded([&] {
    need(t, "trial").trial->report_training(step, metrics_of(names, values, count));
  });
}
dlx_status dlx_trial_report_validation(dlx_trial* t, int64_t step, const char* const* names,
                                       const double* values, size_t count) {
  return guarded([&] {
    need(t, "trial").trial->report_validation(step, metrics_of(names, values, count));
  });
}
dlx_status dlx_trial_report_validation_next(dlx_trial* t, int64_t step, const char* const* names,
                                            const double* values, size_t count, int* next) {
  return guarded([&] {
    need(next, "next") = static_cast<int>(
        need(t, "trial").trial->report_validation(step, metrics_of(names, values, count)));
  });
}
dlx_status dlx_trial_metric_names(dlx_trial* t, const char* const* names, size_t count, uint32_t* out) {
  return guarded([&] {
    auto& handle = need(t, "trial");
    need(out, "out");
    if (count > 0 && names == nullptr) throw InvalidArgument("dlx: metric names is NULL");
    std::vector<std::string> list;
    list.reserve(count);
    for (std::size_t i = 0; i < count; ++i) list.emplace_back(text(names[i], "a metric name"));
    for (std::size_t k = 0; k < handle.metric_names.size(); ++k) {
      if (handle.metric_names[k].names() == list) {
        *out = static_cast<uint32_t>(k);
        return;
      }
    }
    constexpr std::size_t kMaxSets = 4096;
    if (handle.metric_names.size() >= kMaxSets)
      throw InvalidArgument(fmt::format("dlx: more than {} sets of metric names registered (register each set "
                                        "once and keep its number)", kMaxSets));
    handle.metric_names.push_back(handle.trial->metric_names(std::move(list)));
    *out = static_cast<uint32_t>(handle.metric_names.size() - 1);
  });
}

dlx_status dlx_trial_report_training_values(dlx_trial* t, int64_t step, uint32_t names, const double* values) {
  return guarded([&] {
    auto& handle = need(t, "trial");
    const auto& set = registered(handle, names);
    handle.trial->report_training(step, set, values_of(set, values));
  });
}

dlx_status dlx_trial_report_validation_values(dlx_trial* t, int64_t step, uint32_t names, const double* values,
                                              int* next) {
  return guarded([&] {
    auto& handle = need(t, "trial");
    need(next, "next");
    const auto& set = registered(handle, names);
    *next = static_cast<int>(handle.trial->report_validation(step, set, values_of(set, values)));
  });
}

dlx_status dlx_trial_start_length(const dlx_trial* t, int64_t* out) {
  return guarded([&] { need(out, "out") = need(t, "trial").trial->start_length(); });
}
dlx_status dlx_trial_target_length(const dlx_trial* t, int64_t* out) {
  return guarded([&] { need(out, "out") = need(t, "trial").trial->target_length(); });
}
dlx_status dlx_trial_finish(dlx_trial* t) {
  return guarded([&] { need(t, "trial").trial->finish(); });
}

dlx_status dlx_trial_checkpoint_and_exit(dlx_trial* t, int64_t saved_step, double deadline_seconds,
                                        int* exit_code) {
  return guarded([&] {
    auto& out = need(exit_code, "exit_code");
    std::optional<std::chrono::seconds> deadline;
    if (deadline_seconds >= 0) deadline = std::chrono::seconds(static_cast<long>(deadline_seconds));
    out = need(t, "trial").trial->exit_for_requeue(saved_step, deadline);
  });
}

dlx_status dlx_trial_checkpoint_due(dlx_trial* t, int64_t step, int* out) {
  return guarded([&] { need(out, "out") = need(t, "trial").trial->checkpoint_due(step) ? 1 : 0; });
}

dlx_status dlx_trial_should_checkpoint_and_exit(dlx_trial* t, int* out) {
  return guarded([&] {
    need(out, "out") = need(t, "trial").trial->should_checkpoint_and_exit() ? 1 : 0;
  });
}

dlx_status dlx_trial_checkpoint_signal(const dlx_trial* t, int* out) {
  return guarded([&] { need(out, "out") = need(t, "trial").trial->checkpoint_signal(); });
}

dlx_status dlx_trial_note_checkpoint_signal(dlx_trial* t, int signal_number) {
  return guarded([&] { need(t, "trial").trial->note_checkpoint_signal(signal_number); });
}

dlx_status dlx_trial_allreduce(dlx_trial* t, const dlx_tensor* tensors, size_t count) {
  return guarded([&] {
    const auto list = tensors_of(tensors, count);
    need(t, "trial").trial->allreduce(list);
  });
}

dlx_status dlx_trial_allreduce_async(dlx_trial* t, const dlx_tensor* tensors, size_t count,
                                     dlx_request** out) {
  return guarded([&] {
    need(out, "out") = nullptr;
    start_allreduce(t, tensors_of(tensors, count), out);
  });
}

dlx_status dlx_trial_allreduce_device(dlx_trial* t, const dlx_tensor* tensors, size_t count,
                                      void* cuda_stream) {
  return guarded([&] {
    const auto list = tensors_of(tensors, count, dlx::comm::Memory::cuda_device);
    auto& trial = *need(t, "trial").trial;
    trial.communicator().set_cuda_stream(cuda_stream);
    trial.allreduce(list);
  });
}

dlx_status dlx_trial_allreduce_device_async(dlx_trial* t, const dlx_tensor* tensors, size_t count,
                                            void* cuda_stream, dlx_request** out) {
  return guarded([&] {
    need(out, "out") = nullptr;
    const auto list = tensors_of(tensors, count, dlx::comm::Memory::cuda_device);
    need(t, "trial").trial->communicator().set_cuda_stream(cuda_stream);
    start_allreduce(t, list, out);
  });
}

dlx_status dlx_request_wait(dlx_request* request) {
  return guarded([&] {
    std::unique_ptr<dlx_request> owned(&need(request, "request"));
    owned->fused->synchronize();
  });
}

dlx_status dlx_trial_broadcast(dlx_trial* t, const dlx_tensor* tensors, size_t count, int root) {
  return guarded([&] {
    if (root < 0) throw InvalidArgument("dlx: root must be a rank, got " + std::to_string(root));
    const auto list = tensors_of(tensors, count);
    need(t, "trial").trial->broadcast_parameters(list, root);
  });
}

}  // extern "C"
