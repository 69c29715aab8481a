// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where checkpoint's API meets dlx::h5 (h5/). Each public call that reads or writes an HDF5 file
// runs its body through h5_call (h5::call_as): HDF5's own stderr printing off meanwhile, and an
// h5::H5Error leaves as the CheckpointError the API promises. The wrapper's words are neutral;
// what the file should have been ("not a dlx checkpoint: ...") comes from the `kind` this library
// gives h5::open_regular_file and h5::ReadGuard (kCheckpointKind).
#include <utility>

#include "dlx/h5/error.hpp"
#include "dlx/checkpoint/error.hpp"

namespace dlx::checkpoint::detail {

inline constexpr const char* kCheckpointKind = "dlx checkpoint";

template <typename Body>
decltype(auto) h5_call(Body&& body) {
  return h5::call_as<CheckpointError>(std::forward<Body>(body));
}

}  // namespace dlx::checkpoint::detail
