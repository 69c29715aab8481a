// SPDX-License-Identifier: Apache-2.0
#include "nvml_api.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace dlx::launch::nvml {

namespace {

template <typename Function>
bool bind(void* library, const char* name, Function*& function) {
  function = reinterpret_cast<Function*>(::dlsym(library, name));
  return function != nullptr;
}

template <typename Function>
void bind_first(void* library, std::initializer_list<const char*> names, Function*& function) {
  for (const char* name : names) {
    if (bind(library, name, function)) return;
  }
}

}  // namespace

std::string Api::error(Return code) const {
  const char* text = error_string ? error_string(code) : nullptr;
  return text ? fmt::format("{} (NVML error {})", text, code) : fmt::format("NVML error {}", code);
}

std::shared_ptr<const Api> load(std::string& why, const char* library_name) {
  void* library = ::dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = ::dlerror();
    why = fmt::format("no NVIDIA management library ({}): no NVIDIA driver on this node", error ? error : library_name);
    return nullptr;
  }
  auto api = std::make_shared<Api>();
  const bool complete = bind(library, "nvmlInit_v2", api->init) && bind(library, "nvmlShutdown", api->shutdown) &&
                        bind(library, "nvmlErrorString", api->error_string) &&
                        bind(library, "nvmlDeviceGetCount_v2", api->device_count) &&
                        bind(library, "nvmlDeviceGetHandleByIndex_v2", api->handle_by_index) &&
                        bind(library, "nvmlDeviceGetUUID", api->uuid) &&
                        bind(library, "nvmlDeviceGetMemoryInfo", api->memory);
  if (!complete) {
    why = fmt::format("{} lacks the NVML functions dlx reads (a driver older than 10 years?)", library_name);
    ::dlclose(library);
    return nullptr;
  }
  bind_first(library, {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
             api->processes);
  if (!api->processes) bind(library, "nvmlDeviceGetComputeRunningProcesses", api->processes_v1);
  bind(library, "nvmlDeviceGetMemoryInfo_v2", api->memory_v2);
  bind(library, "nvmlDeviceGetSamples", api->samples);
  bind(library, "nvmlDeviceGetProcessUtilization", api->process_utilization);
  bind(library, "nvmlDeviceGetPowerUsage", api->power_mw);
  bind(library, "nvmlDeviceGetClockInfo", api->clock_mhz);
  bind(library, "nvmlDeviceGetPcieThroughput", api->pcie_kbps);
  if (const auto code = api->init(); code != kSuccess) {
    why = fmt::format("NVML did not start: {}", api->error(code));
    ::dlclose(library);
    return nullptr;
  }
  // One shutdown per init, then the library unloaded, when the last user lets go.
  return std::shared_ptr<const Api>(api.get(), [api, library](const Api*) {
    api->shutdown();
    ::dlclose(library);
  });
}

}  // namespace dlx::launch::nvml
