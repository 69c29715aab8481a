// SPDX-License-Identifier: Apache-2.0
#pragma once
// CheckpointError: every failure of the checkpoint library (HDF5 call, layout problem, checksum
// mismatch, system call). When the cause is a system call, error_number() is its errno (ENOSPC,
// EIO, EACCES, ENOENT...) so that a trainer can decide to retry or exit; 0 otherwise.
#include <string>

#include "dlx/common/error.hpp"

namespace dlx::checkpoint {

class CheckpointError : public Error {
 public:
  explicit CheckpointError(const std::string& message, int error_number = 0)
      : Error(message), error_number_(error_number) {}
  int error_number() const noexcept { return error_number_; }

 private:
  int error_number_ = 0;
};

// A load could not put tensors into device memory (Deferral::place_on_device): the CUDA
// runtime failed, or dlx was built without CUDA. The file may be intact, so the searches for the
// latest valid checkpoint let it through instead of skipping to an older file or a fresh start.
class DeviceLoadError : public CheckpointError {
 public:
  using CheckpointError::CheckpointError;
};

}  // namespace dlx::checkpoint
