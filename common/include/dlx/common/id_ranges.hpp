// SPDX-License-Identifier: Apache-2.0
#pragma once
// Trial ids for messages and tables, consecutive runs shortened: {0,1,2,3,5,7,8,9} ->
// "0-3, 5, 7-9" (`dlx plan`'s brackets and rounds, `dlx status`'s warnings).
#include <string>
#include <vector>

namespace dlx {

// `ids` in ascending order; "" when empty.
std::string id_ranges(const std::vector<int>& ids);

}  // namespace dlx
