// SPDX-License-Identifier: Apache-2.0
#pragma once
// A trial's restarts in trial.h5: group /restart_events with one sub-group per restart, named
// 1, 2, ... in order, whose attributes are the RestartEvent's fields (h5dump and h5py show each
// restart as a small attribute table). Records written before restarts were recorded have no
// group: that reads as no events.
#include <filesystem>
#include <vector>

#include <hdf5.h>

#include "dlx/h5/read_guard.hpp"
#include "dlx/record/trial_record.hpp"

namespace dlx::record {

// Creates the groups, or rewrites the attributes of those that exist (a writer extending its file).
void write_restart_events(hid_t root, const std::vector<RestartEvent>& events,
                          const std::filesystem::path& file);
std::vector<RestartEvent> read_restart_events(hid_t root, h5::ReadGuard& guard);

}  // namespace dlx::record
