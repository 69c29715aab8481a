/* SPDX-License-Identifier: Apache-2.0 */
/* Only in the portable libdlx_c (cmake/DlxPortableC.cmake), which links libstdc++ statically and
 * must load with glibc 2.31. The host's libstdc++.a (gcc 12, built against glibc 2.36) refers to
 * two glibc symbols that 2.31 lacks; both are answered here, hidden, so that they bind inside the
 * library and never stand in for glibc's own in the process:
 *   - __libc_single_threaded (glibc 2.32): libstdc++ skips atomic reference counts while it is
 *     non-zero. Zero says "maybe threaded": always atomic, which is always correct.
 *   - arc4random (glibc 2.36): std::random_device's default source. The same kernel randomness
 *     through getrandom (glibc 2.25). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;

__attribute__((visibility("hidden"))) uint32_t arc4random(void) {
  uint32_t value = 0;
  for (;;) {
    const ssize_t got = getrandom(&value, sizeof value, 0);
    if (got == (ssize_t)sizeof value) return value;
    if (got < 0 && errno != EINTR) {
      /* A kernel without getrandom (before Linux 3.17): no silent weak randomness. */
      perror("dlx: getrandom (std::random_device in the portable libdlx_c)");
      abort();
    }
  }
}
