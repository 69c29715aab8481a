// SPDX-License-Identifier: Apache-2.0
// libFuzzer target over the checkpoint and trial.h5 readers on raw bytes: whatever the input is,
// it is written as a file and read. NOT run in CI (scripts/fuzz.sh runs it only when named):
// libhdf5 1.10.8 has crash bugs of its own on malformed bytes (in the superblock, object header
// and B-tree decoders), which dlx cannot fix and which would fail every run. Run by hand to look
// for crashes in dlx's own code, and read each report's stack: a frame in libhdf5_serial.so
// below the crash is HDF5's bug. What earlier runs found is in docs/checkpoint-format.md
// ("Fuzzing").
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "dlx/checkpoint/checkpoint.hpp"
#include "dlx/record/trial_record.hpp"
#include "h5_fuzz_mutate.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dlx::fuzz::quiet_hdf5();
  dlx::fuzz::Scratch::get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = dlx::fuzz::Scratch::get().dir / "raw.h5";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    dlx::checkpoint::verify_checkpoint(path);
  } catch (const dlx::Error&) {
  }
  try {
    dlx::record::load_trial_record(path);
  } catch (const dlx::Error&) {
  }
  return 0;
}
