// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hyperparameters in the JSON the journal and snapshots hold. A trial's hyperparameters are an
// ordered_json object in file order, but the journal and snapshot() speak nlohmann::json, whose
// objects sort their keys; so they travel as a list of [name, value] pairs, which keeps the file
// order and makes the round trip exact: [["optim.lr", 0.01], ["batch", 64]].
#include <nlohmann/json.hpp>

namespace dlx::searcher::detail {

nlohmann::json hparams_to_json(const nlohmann::ordered_json& hparams);
// Throws JournalError when `json` is not such a list.
nlohmann::ordered_json hparams_from_json(const nlohmann::json& json);

}  // namespace dlx::searcher::detail
