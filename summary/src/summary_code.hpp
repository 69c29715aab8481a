// SPDX-License-Identifier: Apache-2.0
#pragma once
// experiment.h5's /code group: where the code the trials run came from (<experiment>/code.json,
// written at submission by the code snapshot). Absent when the experiment has no snapshot.
#include <hdf5.h>

#include <filesystem>

namespace dlx::summary::detail {

void write_code_group(hid_t root, const std::filesystem::path& experiment_dir, const std::filesystem::path& file);

}  // namespace dlx::summary::detail
