// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/gpu_usage.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "nvml_api.hpp"

namespace dlx::launch {

namespace {

double sample_value(nvml::ValueType type, const nvml::Value& value) {
  switch (type) {
    case nvml::ValueType::f64: return value.f64;
    case nvml::ValueType::u32: return value.u32;
    case nvml::ValueType::ulong: return static_cast<double>(value.ulong);
    case nvml::ValueType::u64: return static_cast<double>(value.u64);
    case nvml::ValueType::i64: return static_cast<double>(value.i64);
    case nvml::ValueType::i32: return static_cast<int>(value.u32);
    case nvml::ValueType::u16: return value.u32 & 0xffffu;
  }
  return 0;
}

std::optional<unsigned> whole_number(std::string_view text) {
  unsigned value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<IntervalStats> interval_stats(const std::vector<std::pair<unsigned long long, double>>& samples,
                                            unsigned long long after_us) {
  IntervalStats stats;
  double sum = 0;
  std::size_t count = 0;
  for (const auto& [at, value] : samples) {
    if (at <= after_us) continue;
    stats.min = count == 0 ? value : std::min(stats.min, value);
    stats.max = count == 0 ? value : std::max(stats.max, value);
    stats.newest_us = std::max(stats.newest_us, at);
    sum += value;
    ++count;
  }
  if (count == 0) return std::nullopt;
  stats.mean = sum / static_cast<double>(count);
  return stats;
}

std::optional<std::vector<unsigned>> devices_named(const std::vector<std::string>& visible,
                                                   const std::vector<std::string>& uuids) {
  if (visible.empty()) return std::nullopt;
  std::vector<unsigned> chosen;
  for (const auto& name : visible) {
    std::optional<unsigned> index;
    if (const auto number = whole_number(name)) {
      if (*number < uuids.size()) index = *number;
    } else {
      // CUDA takes a unique prefix of a UUID, with or without its "GPU-".
      const auto prefix = name.starts_with("GPU-") ? name : "GPU-" + name;
      for (unsigned i = 0; i < uuids.size(); ++i) {
        if (uuids[i].starts_with(prefix)) {
          if (index) return std::nullopt;  // ambiguous
          index = i;
        }
      }
    }
    if (!index || std::find(chosen.begin(), chosen.end(), *index) != chosen.end()) return std::nullopt;
    chosen.push_back(*index);
  }
  return chosen;
}

void add_gpu_series(std::map<std::string, double>& values, const std::vector<GpuSample>& devices) {
  for (std::size_t k = 0; k < devices.size(); ++k) {
    const auto& device = devices[k];
    const auto put = [&](std::string_view name, const std::optional<double>& value) {
      if (value) values[fmt::format("gpu{}_{}", k, name)] = *value;
    };
    put("util_percent", device.util_mean);
    put("util_min_percent", device.util_min);
    put("util_max_percent", device.util_max);
    put("trial_sm_percent", device.trial_sm_percent);
    put("memory_bytes", device.memory_bytes);
    put("device_memory_bytes", device.device_memory_bytes);
    put("memory_total_bytes", device.memory_total_bytes);
    put("power_watts", device.power_watts);
    put("sm_clock_mhz", device.sm_clock_mhz);
  }
}

namespace {

// Every device NVML lists, in its order: its handle and UUID, or a null handle and an empty UUID
// for one this process may not open. nullopt with `why` when NVML cannot count them.
struct ListedDevice {
  nvml::Device handle = nullptr;
  std::string uuid;
};
std::optional<std::vector<ListedDevice>> list_devices(const nvml::Api& api, std::string& why) {
  unsigned count = 0;
  if (const auto code = api.device_count(&count); code != nvml::kSuccess) {
    why = fmt::format("NVML counts no GPU: {}", api.error(code));
    return std::nullopt;
  }
  std::vector<ListedDevice> devices(count);
  for (unsigned i = 0; i < count; ++i) {
    char uuid[nvml::kUuidBufferSize] = {};
    if (api.handle_by_index(i, &devices[i].handle) != nvml::kSuccess ||
        api.uuid(devices[i].handle, uuid, sizeof uuid) != nvml::kSuccess) {
      devices[i] = {};
    } else {
      devices[i].uuid = uuid;
    }
  }
  return devices;
}

}  // namespace

GpuHostFacts gpu_host_facts() {
  GpuHostFacts facts;
  const auto api = nvml::load(facts.why_not);
  if (!api) return facts;
  const auto devices = list_devices(*api, facts.why_not);
  if (!devices) return facts;
  for (std::size_t i = 0; i < devices->size(); ++i) {
    const auto& device = (*devices)[i];
    facts.uuids.push_back(device.handle ? device.uuid : fmt::format("(device {}: not readable by this user)", i));
  }
  facts.utilization_samples = api->samples != nullptr;
  facts.process_utilization = api->process_utilization != nullptr;
  facts.process_list = api->processes != nullptr || api->processes_v1 != nullptr;
  return facts;
}

struct GpuUsage::Device {
  nvml::Device handle = nullptr;
  std::string uuid;
  // The newest driver sample already counted, per kind: 0 until the first read, which only
  // takes this baseline (what came before is not the trial's).
  unsigned long long util_seen_us = 0;
  unsigned long long process_seen_us = 0;
  bool started = false;
  std::vector<nvml::Sample> util_buffer = std::vector<nvml::Sample>(128);
  std::vector<nvml::ProcessUtilization> process_buffer = std::vector<nvml::ProcessUtilization>(64);
};

std::unique_ptr<GpuUsage> GpuUsage::open(const std::vector<std::string>& visible, std::string& why) {
  auto api = nvml::load(why);
  if (!api) return nullptr;
  auto usage = std::make_unique<GpuUsage>(std::move(api), visible, why);
  if (usage->devices_.empty()) return nullptr;
  return usage;
}

GpuUsage::GpuUsage(std::shared_ptr<const nvml::Api> api, std::vector<std::string> visible, std::string& why)
    : api_(std::move(api)) {
  const auto listed = list_devices(*api_, why);
  if (!listed) return;
  std::vector<std::string> uuids;
  for (const auto& entry : *listed) {
    auto device = std::make_unique<Device>();
    device->handle = entry.handle;  // null: a device this process may not open, never chosen
    device->uuid = entry.uuid;
    uuids.push_back(entry.uuid);
    devices_.push_back(std::move(device));
  }
  if (listed->empty()) why = "NVML sees no GPU on this node";
  if (const auto named = devices_named(visible, uuids)) {
    chosen_ = *named;
    named_ = std::none_of(chosen_.begin(), chosen_.end(), [&](unsigned i) { return devices_[i]->handle == nullptr; });
    if (!named_) chosen_.clear();
  }
}

GpuUsage::~GpuUsage() = default;

// Without a list naming them: the devices where a trainer process holds a context, as they appear.
void GpuUsage::follow_processes(const std::vector<pid_t>& trial) {
  const std::set<pid_t> ours(trial.begin(), trial.end());
  for (unsigned i = 0; i < devices_.size(); ++i) {
    const auto handle = devices_[i]->handle;
    if (!handle || std::find(chosen_.begin(), chosen_.end(), i) != chosen_.end()) continue;
    const auto processes = process_list(handle);
    if (processes && std::any_of(processes->begin(), processes->end(),
                                 [&](const auto& process) { return ours.contains(process.first); })) {
      chosen_.push_back(i);
    }
  }
}

// The processes with a CUDA context on the device and the memory each holds (kValueNotAvailable
// where the driver does not say); nullopt where this driver or device gives no list.
std::optional<std::vector<std::pair<pid_t, unsigned long long>>> GpuUsage::process_list(void* handle) const {
  const auto device = static_cast<nvml::Device>(handle);
  const auto read_list = [&](auto call, auto entry) -> std::optional<std::vector<std::pair<pid_t, unsigned long long>>> {
    std::vector<decltype(entry)> infos(16);
    for (int tries = 0; tries < 4; ++tries) {
      unsigned size = static_cast<unsigned>(infos.size());
      const auto code = call(device, &size, infos.data());
      if (code == nvml::kInsufficientSize) {  // more processes than room: size says how many now
        infos.resize(std::max<std::size_t>(size, infos.size() * 2) + 8);
        continue;
      }
      if (code != nvml::kSuccess) return std::nullopt;
      std::vector<std::pair<pid_t, unsigned long long>> out;
      for (unsigned p = 0; p < size && p < infos.size(); ++p) {
        out.emplace_back(static_cast<pid_t>(infos[p].pid), infos[p].used_memory);
      }
      return out;
    }
    return std::nullopt;
  };
  if (api_->processes) return read_list(api_->processes, nvml::ProcessInfo{});
  if (api_->processes_v1) return read_list(api_->processes_v1, nvml::ProcessInfoV1{});
  return std::nullopt;
}

GpuSample GpuUsage::read(Device& device, const std::vector<pid_t>& trial) const {
  GpuSample out;
  const std::set<pid_t> ours(trial.begin(), trial.end());
  const auto handle = device.handle;
  // In use by anyone, without the driver's own reservation where the driver can say (as
  // nvidia-smi shows it; about 0.6 GiB more on an H200 with it).
  if (nvml::MemoryV2 memory{nvml::kMemoryV2Version, 0, 0, 0, 0};
      api_->memory_v2 && api_->memory_v2(handle, &memory) == nvml::kSuccess) {
    out.device_memory_bytes = static_cast<double>(memory.used);
    out.memory_total_bytes = static_cast<double>(memory.total);
  } else if (nvml::Memory legacy{}; api_->memory(handle, &legacy) == nvml::kSuccess) {
    out.device_memory_bytes = static_cast<double>(legacy.used);
    out.memory_total_bytes = static_cast<double>(legacy.total);
  }
  if (const auto processes = process_list(handle)) {
    double bytes = 0;
    for (const auto& [pid, used] : *processes) {
      if (ours.contains(pid) && used != nvml::kValueNotAvailable) bytes += static_cast<double>(used);
    }
    out.memory_bytes = bytes;
  }

  // The driver's samples since the last seen, into a buffer kept per device; one too small is
  // grown from the count the driver then gives. These two reads are most of a sample's cost
  // (1.4 ms of CPU each on an H200: gpu_metrics_check).
  if (api_->samples) {
    nvml::ValueType type{};
    unsigned count = static_cast<unsigned>(device.util_buffer.size());
    auto code = api_->samples(handle, nvml::kGpuUtilizationSamples, device.util_seen_us, &type, &count,
                              device.util_buffer.data());
    if (code == nvml::kInsufficientSize &&
        api_->samples(handle, nvml::kGpuUtilizationSamples, device.util_seen_us, &type, &count, nullptr) ==
            nvml::kSuccess) {
      device.util_buffer.resize(count + 16);
      count = static_cast<unsigned>(device.util_buffer.size());
      code = api_->samples(handle, nvml::kGpuUtilizationSamples, device.util_seen_us, &type, &count,
                           device.util_buffer.data());
    }
    if (code == nvml::kSuccess) {
      std::vector<std::pair<unsigned long long, double>> values;
      for (unsigned i = 0; i < count && i < device.util_buffer.size(); ++i) {
        values.emplace_back(device.util_buffer[i].timestamp_us, sample_value(type, device.util_buffer[i].value));
      }
      if (const auto stats = interval_stats(values, device.util_seen_us)) {
        if (device.started) {
          out.util_mean = stats->mean;
          out.util_min = stats->min;
          out.util_max = stats->max;
        }
        device.util_seen_us = stats->newest_us;
      }
    }
  }
  if (api_->process_utilization) {
    unsigned count = static_cast<unsigned>(device.process_buffer.size());
    auto code = api_->process_utilization(handle, device.process_buffer.data(), &count, device.process_seen_us);
    if (code == nvml::kInsufficientSize &&
        api_->process_utilization(handle, nullptr, &count, device.process_seen_us) == nvml::kInsufficientSize) {
      device.process_buffer.resize(count + 16);
      count = static_cast<unsigned>(device.process_buffer.size());
      code = api_->process_utilization(handle, device.process_buffer.data(), &count, device.process_seen_us);
    }
    if (code == nvml::kNotFound) {
      if (device.started) out.trial_sm_percent = 0;  // no process ran a kernel in the interval
    } else if (code == nvml::kSuccess) {
      // The trial's share at each of the driver's instants, then their mean.
      std::map<unsigned long long, double> at;
      for (unsigned i = 0; i < count && i < device.process_buffer.size(); ++i) {
        const auto& sample = device.process_buffer[i];
        auto& share = at[sample.timestamp_us];
        if (ours.contains(static_cast<pid_t>(sample.pid))) share += sample.sm_percent;
      }
      std::vector<std::pair<unsigned long long, double>> values(at.begin(), at.end());
      if (const auto stats = interval_stats(values, device.process_seen_us)) {
        if (device.started) out.trial_sm_percent = std::min(100.0, stats->mean);
        device.process_seen_us = stats->newest_us;
      }
    }
  }
  if (unsigned milliwatts = 0; api_->power_mw && api_->power_mw(handle, &milliwatts) == nvml::kSuccess) {
    out.power_watts = milliwatts / 1000.0;
  }
  if (unsigned mhz = 0; api_->clock_mhz && api_->clock_mhz(handle, nvml::kClockSm, &mhz) == nvml::kSuccess) {
    out.sm_clock_mhz = mhz;
  }
  device.started = true;
  return out;
}

std::vector<GpuSample> GpuUsage::sample(const std::vector<pid_t>& trial) {
  if (!named_) follow_processes(trial);
  std::vector<GpuSample> out;
  out.reserve(chosen_.size());
  for (const unsigned index : chosen_) out.push_back(read(*devices_[index], trial));
  return out;
}

}  // namespace dlx::launch
