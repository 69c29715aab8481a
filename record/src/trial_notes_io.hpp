// SPDX-License-Identifier: Apache-2.0
#pragma once
// The record's optional notes in trial.h5, as attributes of / (docs/file-format.md): written only
// when there is something to say, so records without them read as before and older readers ignore
// them; read back as hostile input, every one checked against the bounds of trial_record.hpp.
//   hparam_warnings  string: a JSON array of {"kind": "default"|"unread", "name": ..., "message": ...}
//   last_error       string: the last crash ("exit 1: ValueError: ...")
//   same_failures    int32: consecutive crashes like it
#include <filesystem>

#include <hdf5.h>

#include "dlx/h5/read_guard.hpp"
#include "dlx/record/trial_record.hpp"

namespace dlx::record {

void write_trial_notes(hid_t root, const TrialRecord& record, const std::filesystem::path& file);
void read_trial_notes(hid_t root, TrialRecord& record, h5::ReadGuard& guard);

}  // namespace dlx::record
