// SPDX-License-Identifier: Apache-2.0
#include "dlx/h5/handle.hpp"

#include <string>
#include <utility>

#include "dlx/h5/error.hpp"

namespace dlx::h5 {

Handle::Handle(Handle&& other) noexcept
    : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = std::exchange(other.id_, H5I_INVALID_HID);
    closer_ = other.closer_;
  }
  return *this;
}

void Handle::close(const std::filesystem::path& file, std::string_view what) {
  if (id_ < 0) return;
  hid_t id = std::exchange(id_, H5I_INVALID_HID);
  check(closer_(id), file, "close " + std::string(what));
}

void Handle::reset() noexcept {
  if (id_ < 0) return;
  hid_t id = std::exchange(id_, H5I_INVALID_HID);
  if (closer_(id) < 0) H5Eclear2(H5E_DEFAULT);  // nothing to report from a destructor
}

}  // namespace dlx::h5
