// SPDX-License-Identifier: Apache-2.0
#pragma once
// The number of CPUs this thread may run on: its affinity mask (sched_getaffinity), which a
// Slurm step's cgroup cpuset and task binding narrow, not the machine's count. A copy or a read
// sized by the machine would run more threads than the step has CPUs, and they would only take
// turns on them, beside the trainer's own. At least 1; std::thread::hardware_concurrency() when
// the mask cannot be read.
namespace dlx {

unsigned usable_cpus();

}  // namespace dlx
