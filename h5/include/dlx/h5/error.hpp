// SPDX-License-Identifier: Apache-2.0
#pragma once
// Checked HDF5 calls: a negative return becomes an H5Error that names the file, the operation and
// the innermost entry of HDF5's error stack (where the failure was detected).
// HDF5's own stderr printing is switched off only while a QuietErrors guard is alive, so other
// HDF5 users in the same process keep their handler.
#include <filesystem>
#include <string>
#include <string_view>

#include <hdf5.h>

#include "dlx/common/error.hpp"

namespace dlx::h5 {

// Every failure of dlx::h5: an HDF5 call, a file that breaks a reader's rules, the system call
// that opened or created a file. error_number() is the errno when a system call is the cause
// (ENOSPC, EIO, EACCES, ENOENT...), 0 otherwise. Libraries built on dlx::h5 turn it into their
// own error type at their API, adding what the file was meant to be (checkpoint/).
class H5Error : public Error {
 public:
  explicit H5Error(const std::string& message, int error_number = 0)
      : Error(message), error_number_(error_number) {}
  int error_number() const noexcept { return error_number_; }

 private:
  int error_number_ = 0;
};

// Saves the automatic error handler of H5E_DEFAULT, disables it, restores it on destruction.
class QuietErrors {
 public:
  QuietErrors() noexcept;
  ~QuietErrors();
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t saved_function_ = nullptr;
  void* saved_data_ = nullptr;
  bool saved_ = false;
};

// The innermost description on the default error stack ("" when empty); clears the stack.
std::string innermost_error();

// Throws H5Error "<file>: cannot <operation>: <innermost HDF5 error>".
[[noreturn]] void throw_error(const std::filesystem::path& file, std::string_view operation);

// Throws H5Error "<file>: <problem>" (a layout problem, not an HDF5 call failure).
[[noreturn]] void throw_format_error(const std::filesystem::path& file, std::string_view problem);

// Return `result` unchanged when it is not negative; otherwise throw_error.
hid_t check_id(hid_t result, const std::filesystem::path& file, std::string_view operation);
herr_t check(herr_t result, const std::filesystem::path& file, std::string_view operation);
htri_t check_tri(htri_t result, const std::filesystem::path& file, std::string_view operation);

}  // namespace dlx::h5
