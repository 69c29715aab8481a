// SPDX-License-Identifier: Apache-2.0
#pragma once
// The part of NVIDIA's management library (NVML, libnvidia-ml.so.1, installed with the driver)
// that the GPU sampler reads, loaded at run time with dlopen: dlx builds and runs on nodes without
// a driver, and the build needs no NVML header. The declarations below follow NVML's documented
// C ABI (nvml.h): every call returns an nvmlReturn_t (0: success), devices are opaque handles.
#include <cstdint>
#include <memory>
#include <string>

namespace dlx::launch::nvml {

using Return = int;
using Device = struct DeviceOpaque*;
inline constexpr Return kSuccess = 0;
inline constexpr Return kNotSupported = 3;
inline constexpr Return kNotFound = 6;
inline constexpr Return kInsufficientSize = 7;

inline constexpr int kClockSm = 1;                   // nvmlClockType_t NVML_CLOCK_SM
inline constexpr int kPcieTxBytes = 0;               // nvmlPcieUtilCounter_t, KB/s
inline constexpr int kPcieRxBytes = 1;
inline constexpr int kGpuUtilizationSamples = 1;     // nvmlSamplingType_t NVML_GPU_UTILIZATION_SAMPLES
inline constexpr unsigned kUuidBufferSize = 96;      // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr std::uint64_t kValueNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE

// nvmlValueType_t of a sample's value.
enum class ValueType : int { f64 = 0, u32 = 1, ulong = 2, u64 = 3, i64 = 4, i32 = 5, u16 = 6 };

struct Memory {  // nvmlMemory_t: `used` counts the driver's reserved memory
  unsigned long long total, free, used;
};
struct MemoryV2 {  // nvmlMemory_v2_t: `used` without the reserved memory, as nvidia-smi shows it
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
// NVML_STRUCT_VERSION(Memory, 2): the struct's size, and its version in the top byte.
inline constexpr unsigned kMemoryV2Version = static_cast<unsigned>(sizeof(MemoryV2)) | (2u << 24);
struct ProcessInfo {  // nvmlProcessInfo_t as the _v2 and _v3 calls fill it
  unsigned int pid;
  unsigned long long used_memory;
  unsigned int gpu_instance, compute_instance;
};
struct ProcessInfoV1 {  // nvmlProcessInfo_v1_t, of the unversioned call on older drivers
  unsigned int pid;
  unsigned long long used_memory;
};
union Value {  // nvmlValue_t
  double f64;
  unsigned int u32;
  unsigned long ulong;
  unsigned long long u64;
  long long i64;
};
struct Sample {  // nvmlSample_t
  unsigned long long timestamp_us;
  Value value;
};
struct ProcessUtilization {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long timestamp_us;
  unsigned int sm_percent, memory_percent, encoder_percent, decoder_percent;
};

// The loaded library: each function, or null where this driver lacks it (the optional ones).
struct Api {
  Return (*init)() = nullptr;                                 // nvmlInit_v2
  Return (*shutdown)() = nullptr;                             // nvmlShutdown
  const char* (*error_string)(Return) = nullptr;              // nvmlErrorString
  Return (*device_count)(unsigned*) = nullptr;                // nvmlDeviceGetCount_v2
  Return (*handle_by_index)(unsigned, Device*) = nullptr;     // nvmlDeviceGetHandleByIndex_v2
  Return (*uuid)(Device, char*, unsigned) = nullptr;          // nvmlDeviceGetUUID
  Return (*memory)(Device, Memory*) = nullptr;                // nvmlDeviceGetMemoryInfo
  // optional:
  Return (*memory_v2)(Device, MemoryV2*) = nullptr;           // nvmlDeviceGetMemoryInfo_v2
  Return (*processes)(Device, unsigned*, ProcessInfo*) = nullptr;      // ..._v3, else _v2
  Return (*processes_v1)(Device, unsigned*, ProcessInfoV1*) = nullptr; // unversioned
  Return (*samples)(Device, int, unsigned long long, ValueType*, unsigned*, Sample*) = nullptr;
  Return (*process_utilization)(Device, ProcessUtilization*, unsigned*, unsigned long long) = nullptr;
  Return (*power_mw)(Device, unsigned*) = nullptr;            // nvmlDeviceGetPowerUsage
  Return (*clock_mhz)(Device, int, unsigned*) = nullptr;      // nvmlDeviceGetClockInfo
  // nvmlDeviceGetPcieThroughput: not sampled (gpu_usage.hpp says why); gpu_metrics_check times it.
  Return (*pcie_kbps)(Device, int, unsigned*) = nullptr;

  std::string error(Return code) const;
};

// Loads libnvidia-ml.so.1 (or `library`, for tests) and initialises it; nullptr with `why` set
// when there is no such library, a required function is missing, or nvmlInit fails (no driver,
// no device). Shuts NVML down when the last reference goes.
std::shared_ptr<const Api> load(std::string& why, const char* library = "libnvidia-ml.so.1");

}  // namespace dlx::launch::nvml
