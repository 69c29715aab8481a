// SPDX-License-Identifier: Apache-2.0
#pragma once
// This machine's host name (gethostname), for messages, file names and the launcher's placement;
// "unknown-host" in the case gethostname fails.
#include <string>

namespace dlx {

std::string host_name();

}  // namespace dlx
