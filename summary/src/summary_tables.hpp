// SPDX-License-Identifier: Apache-2.0
#pragma once
// The tables of experiment.h5, built from the searcher state (no HDF5 here: columns only).
#include <vector>

#include "dlx/config/experiment.hpp"
#include "dlx/searcher/search_state.hpp"
#include "h5_table.hpp"

namespace dlx::summary::detail {

// One row per hyperparameter: name, type, minval, maxval, base, count, values.
std::vector<TableColumn> search_space_table(const config::Experiment& experiment);
// One row per trial the searcher created, ascending id.
std::vector<TableColumn> trial_table(const searcher::SearchState& state);
// One row per searcher event, in journal order.
std::vector<TableColumn> decision_table(const searcher::SearchState& state);

}  // namespace dlx::summary::detail
