// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where checkpoint's API meets dlx::h5 (h5/). Each public call that reads or writes an HDF5 file
// runs its body through h5_call: HDF5's own stderr printing is off meanwhile (h5::QuietErrors),
// and an h5::H5Error leaves as the CheckpointError the API promises, with the same message and
// errno. The wrapper's words are neutral; what the file should have been ("not a dlx
// checkpoint: ...") comes from the `kind` this library gives h5::open_regular_file and
// h5::ReadGuard (kCheckpointKind).
#include <utility>

#include "dlx/checkpoint/error.hpp"
#include "dlx/h5/error.hpp"

namespace dlx::checkpoint::detail {

inline constexpr const char* kCheckpointKind = "dlx checkpoint";

template <typename Body>
decltype(auto) h5_call(Body&& body) {
  h5::QuietErrors quiet;
  try {
    return std::forward<Body>(body)();
  } catch (const h5::H5Error& error) {
    throw CheckpointError(error.what(), error.error_number());
  }
}

}  // namespace dlx::checkpoint::detail
