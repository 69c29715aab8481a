// SPDX-License-Identifier: Apache-2.0
#include "dlx/env/task_placement.hpp"

namespace dlx::env {

const char* to_string(Launcher launcher) {
  switch (launcher) {
    case Launcher::none: return "single-process";
    case Launcher::srun: return "srun";
    case Launcher::mpirun: return "mpirun";
  }
  return "unknown";
}

}  // namespace dlx::env
