#include "dlx/checkpoint/h5/error.hpp"

#include <fmt/format.h>

#include "dlx/checkpoint/trial_record.hpp"

namespace dlx::checkpoint::h5 {

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
  hid_t minor = H5I_INVALID_HID;
  bool found = false;
};

herr_t take_innermost(unsigned n, const H5E_error2_t* entry, void* data) {
  // Walking upward, entry 0 is the deepest one: where HDF5 first detected the failure.
  auto* innermost = static_cast<Innermost*>(data);
  if (n == 0 && entry != nullptr) {
    innermost->found = true;
    innermost->minor = entry->min_num;
    if (entry->desc != nullptr) innermost->description = entry->desc;
  }
  return 0;
}

}  // namespace

std::string innermost_error() {
  Innermost innermost;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &innermost);
  if (innermost.found && innermost.description.empty()) {
    char message[256] = {};
    if (H5Eget_msg(innermost.minor, nullptr, message, sizeof message) > 0)
      innermost.description = message;
  }
  H5Eclear2(H5E_DEFAULT);
  return innermost.description;
}

void throw_error(const std::filesystem::path& file, std::string_view operation) {
  auto detail = innermost_error();
  if (detail.empty()) detail = "HDF5 reported a failure without details";
  throw CheckpointError(fmt::format("{}: cannot {}: {}", file.string(), operation, detail));
}

void throw_format_error(const std::filesystem::path& file, std::string_view problem) {
  throw CheckpointError(fmt::format("{}: {}", file.string(), problem));
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

}  // namespace dlx::checkpoint::h5
