// SPDX-License-Identifier: Apache-2.0
#pragma once
// A signal's name as messages print it ("SIGUSR2"), or "signal N" for one without a name.
#include <string>

namespace dlx {

std::string signal_name(int signal_number);

}  // namespace dlx
