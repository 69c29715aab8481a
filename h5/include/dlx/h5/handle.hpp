// SPDX-License-Identifier: Apache-2.0
#pragma once
// RAII ownership of one HDF5 identifier (file, group, dataset, attribute, dataspace, datatype,
// property list). Move-only: a move steals the id; the destructor closes it and never throws.
// Use close() where the close itself can fail and must be reported (a file being written).
#include <filesystem>
#include <string_view>

#include <hdf5.h>

namespace dlx::h5 {

class Handle {
 public:
  using Closer = herr_t (*)(hid_t);

  Handle() noexcept = default;
  // Takes ownership of a valid `id` (>= 0), closed by `closer` (H5Fclose, H5Gclose, ...).
  Handle(hid_t id, Closer closer) noexcept : id_(id), closer_(closer) {}
  ~Handle() { reset(); }

  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ >= 0; }

  // Closes now and throws H5Error naming `file` if HDF5 reports a failure.
  void close(const std::filesystem::path& file, std::string_view what);
  // Closes now, ignoring failures (the destructor's behaviour).
  void reset() noexcept;

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

}  // namespace dlx::h5
