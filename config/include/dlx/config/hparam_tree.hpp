// SPDX-License-Identifier: Apache-2.0
#pragma once
// A trial's hyperparameters in the two shapes dlx uses (docs/sdk.md "Hyperparameters").
//   flat    name -> value, names dotted for nested groups ({"optim.lr": 0.1, "batch": 64}): what
//           the config, the searcher, the journal and the trial records hold. The experiment's
//           name list is the source of truth for which names are groups.
//   nested  what a trainer sees in DLX_HPARAMS, the way Determined passes hyperparameters:
//           {"optim": {"lr": 0.1}, "batch": 64}. A value that is itself a mapping (a const or
//           categorical value) is a leaf like any other value: only the dots of names nest.
// Determined allows '.' inside a name (`a.b: 1` at the top level stays the key "a.b" there);
// dlx's flat form cannot tell such a name from a group, so it nests it like one ({"a": {"b": 1}}).
// Lookups accept both: find_hyperparameter("a.b") finds a literal "a.b" key as well as the group
// path, so a trainer written for either reads the same value.
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dlx/common/error.hpp"

namespace dlx::config {

class HparamTreeError : public Error {
 public:
  using Error::Error;
};

// {"optim.lr": 0.1, "batch": 64} -> {"optim": {"lr": 0.1}, "batch": 64}, in the flat object's
// order (a group appears where its first member does). Throws HparamTreeError when a name is both
// a value and a group ("a" and "a.b") or has an empty part ("a..b", ".a").
nlohmann::ordered_json nest_hyperparameters(const nlohmann::ordered_json& flat);

// The value at `name` in a nested (or flat) object: the literal key first, then the key up to a
// '.', descending into a mapping there, at each level. nullptr when there is none. A group comes
// back as its mapping.
const nlohmann::ordered_json* find_hyperparameter(const nlohmann::ordered_json& tree,
                                                  std::string_view name);

// nested -> flat for the experiment's `names` (each looked up with find_hyperparameter; a name
// the tree lacks is left out).
nlohmann::ordered_json flatten_hyperparameters(const nlohmann::ordered_json& tree,
                                               std::span<const std::string> names);
// nested -> flat without the name list (outside a trial): every mapping is taken as a group, an
// empty mapping as a value.
nlohmann::ordered_json flatten_hyperparameters(const nlohmann::ordered_json& tree);

// The value of a DLX_HP_<NAME> variable: a string as it is, anything else (a number, a boolean,
// null, a list, a mapping) as its JSON text.
std::string hyperparameter_variable_value(const nlohmann::ordered_json& value);

}  // namespace dlx::config
