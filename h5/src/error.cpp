// SPDX-License-Identifier: Apache-2.0
#include "dlx/h5/error.hpp"

#include <cerrno>

#include <fmt/format.h>

namespace dlx::h5 {

QuietErrors::QuietErrors() noexcept {
  saved_ = H5Eget_auto2(H5E_DEFAULT, &saved_function_, &saved_data_) >= 0;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietErrors::~QuietErrors() {
  if (saved_) H5Eset_auto2(H5E_DEFAULT, saved_function_, saved_data_);
}

namespace {

struct Innermost {
  std::string description;
  hid_t major = H5I_INVALID_HID;
  hid_t minor = H5I_INVALID_HID;
  bool found = false;
};

herr_t take_innermost(unsigned n, const H5E_error2_t* entry, void* data) {
  // Walking upward, entry 0 is the deepest one: where HDF5 first detected the failure.
  auto* innermost = static_cast<Innermost*>(data);
  if (n == 0 && entry != nullptr) {
    innermost->found = true;
    innermost->major = entry->maj_num;
    innermost->minor = entry->min_num;
    if (entry->desc != nullptr) innermost->description = entry->desc;
  }
  return 0;
}

// The errno of the system call behind an HDF5 failure, or 0. Only low-level I/O and file
// open/create failures come from a system call; for them errno is still the one it set.
int system_error_number(const Innermost& innermost, int saved_errno) {
  if (!innermost.found) return 0;
  bool system_call = innermost.major == H5E_IO || innermost.minor == H5E_CANTOPENFILE ||
                     innermost.minor == H5E_CANTCREATE || innermost.minor == H5E_WRITEERROR ||
                     innermost.minor == H5E_READERROR || innermost.minor == H5E_SEEKERROR ||
                     innermost.minor == H5E_CANTFLUSH;
  return system_call ? saved_errno : 0;
}

Innermost take_error_stack() {
  Innermost innermost;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &innermost);
  if (innermost.found && innermost.description.empty()) {
    char message[256] = {};
    if (H5Eget_msg(innermost.minor, nullptr, message, sizeof message) > 0)
      innermost.description = message;
  }
  H5Eclear2(H5E_DEFAULT);
  return innermost;
}

}  // namespace

std::string innermost_error() { return take_error_stack().description; }

void throw_error(const std::filesystem::path& file, std::string_view operation) {
  int saved_errno = errno;
  auto innermost = take_error_stack();
  auto detail = innermost.description;
  if (detail.empty()) detail = "HDF5 reported a failure without details";
  throw H5Error(fmt::format("{}: cannot {}: {}", file.string(), operation, detail),
                        system_error_number(innermost, saved_errno));
}

void throw_format_error(const std::filesystem::path& file, std::string_view problem) {
  throw H5Error(fmt::format("{}: {}", file.string(), problem));
}

hid_t check_id(hid_t result, const std::filesystem::path& file, std::string_view operation) {
  if (result < 0) throw_error(file, operation);
  return result;
}

herr_t check(herr_t result, const std::filesystem::path& file, std::string_view operation) {
  if (result < 0) throw_error(file, operation);
  return result;
}

htri_t check_tri(htri_t result, const std::filesystem::path& file, std::string_view operation) {
  if (result < 0) throw_error(file, operation);
  return result;
}

}  // namespace dlx::h5
