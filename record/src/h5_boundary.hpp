// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where the record library meets dlx::h5 (h5/). Each public call that reads or writes trial.h5
// runs its body through h5_call: HDF5's own stderr printing is off meanwhile (h5::QuietErrors),
// and an h5::H5Error leaves as the RecordError the API promises, with the same message and
// errno. What the file should have been ("not a dlx trial record: ...") comes from the kind this
// library gives h5::open_regular_file and h5::ReadGuard.
#include <utility>

#include "dlx/h5/error.hpp"
#include "dlx/record/error.hpp"

namespace dlx::record::detail {

inline constexpr const char* kTrialRecordKind = "dlx trial record";

template <typename Body>
decltype(auto) h5_call(Body&& body) {
  h5::QuietErrors quiet;
  try {
    return std::forward<Body>(body)();
  } catch (const h5::H5Error& error) {
    throw RecordError(error.what(), error.error_number());
  }
}

}  // namespace dlx::record::detail
