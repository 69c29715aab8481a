// SPDX-License-Identifier: Apache-2.0
#pragma once
// The root of dlx's typed exceptions. Libraries throw subclasses (ConfigError, CheckpointError,
// CommError, ...); the edges (plugin callbacks, main) turn them into messages and exit codes.
#include <stdexcept>
#include <string>

namespace dlx {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failed system call: the message names the operation, the path and strerror(errno).
class SystemError : public Error {
 public:
  SystemError(const std::string& what_failed, int error_number);
  // A failure that strerror() would explain badly ("not a regular file (a FIFO)"): `message` is
  // the whole text; error_number() still carries the errno for callers that branch on it.
  static SystemError with_message(const std::string& message, int error_number) {
    return SystemError(Verbatim{}, message, error_number);
  }
  int error_number() const noexcept { return error_number_; }

 private:
  struct Verbatim {};
  SystemError(Verbatim, const std::string& message, int error_number)
      : Error(message), error_number_(error_number) {}
  int error_number_;
};

}  // namespace dlx
