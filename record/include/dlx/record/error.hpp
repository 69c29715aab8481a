// SPDX-License-Identifier: Apache-2.0
#pragma once
// RecordError: every failure of the record library (trial.h5 and the metrics log that continues
// it): a file that is unreadable, refused as hostile or not a dlx trial record, a record that
// cannot be stored, a failed system call. Messages name the file; when the cause is a system
// call, error_number() is its errno.
#include <string>

#include "dlx/common/error.hpp"

namespace dlx::record {

class RecordError : public Error {
 public:
  explicit RecordError(const std::string& message, int error_number = 0)
      : Error(message), error_number_(error_number) {}
  int error_number() const noexcept { return error_number_; }

 private:
  int error_number_ = 0;
};

}  // namespace dlx::record
