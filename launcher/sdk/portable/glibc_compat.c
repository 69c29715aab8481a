/* SPDX-License-Identifier: Apache-2.0 */
/* Only in the portable libdlx_c (cmake/DlxPortableC.cmake), which links libstdc++ statically and
 * must load with glibc 2.28 (RHEL 8 and its rebuilds, the oldest images a site still runs). It is
 * built against Debian bullseye's glibc 2.31, the oldest root Debian's mirrors still serve, and the
 * host's libstdc++.a (gcc 12, built against glibc 2.36). Each symbol below that 2.28 lacks, or
 * that binds a version after 2.28, is answered here, hidden, so that the references of the
 * library's own objects and of its static libraries bind inside the library and nothing here
 * stands in for glibc's own symbols in the process:
 *   - __libc_single_threaded (glibc 2.32): libstdc++ skips atomic reference counts while it is
 *     non-zero. Zero says "maybe threaded": always atomic, which is always correct.
 *   - arc4random (glibc 2.36): std::random_device's default source. The same kernel randomness
 *     through getrandom (glibc 2.25).
 *   - exp, log, pow (GLIBC_2.29: glibc 2.29 dropped their SVID error-handling wrappers and gave
 *     the new entry points a new version): the same functions under their first version
 *     (GLIBC_2.2.5), which every glibc keeps. Since 2.28 both versions compute with the same
 *     code; the old one only sets errno through the wrapper, as C asks.
 *   - pthread_cond_clockwait (glibc 2.30): libstdc++'s waits on std::chrono::steady_clock. glibc's
 *     own where the process's glibc has it (looked up once, by version); with 2.28 the same wait
 *     by pthread_cond_timedwait on the condition variable's clock (CLOCK_REALTIME, libstdc++'s
 *     default), the monotonic deadline turned into a realtime one when the wait starts. A wall
 *     clock step during such a wait moves its end: libstdc++ then wakes early and waits again, or
 *     wakes late by the step; no wait is lost. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "glibc_compat.h"

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

/* glibc's math functions under their first version. */
__asm__(".symver dlx_glibc_exp, exp@GLIBC_2.2.5");
__asm__(".symver dlx_glibc_log, log@GLIBC_2.2.5");
__asm__(".symver dlx_glibc_pow, pow@GLIBC_2.2.5");
double dlx_glibc_exp(double x);
double dlx_glibc_log(double x);
double dlx_glibc_pow(double x, double y);

__attribute__((visibility("hidden"))) double exp(double x) { return dlx_glibc_exp(x); }
__attribute__((visibility("hidden"))) double log(double x) { return dlx_glibc_log(x); }
__attribute__((visibility("hidden"))) double pow(double x, double y) { return dlx_glibc_pow(x, y); }

/* pthread_cond_clockwait: glibc's, or the wait by realtime deadline. */
static void add_nanoseconds(struct timespec* t, int64_t nanoseconds) {
  const int64_t total = (int64_t)t->tv_nsec + nanoseconds % 1000000000;
  t->tv_sec += (time_t)(nanoseconds / 1000000000 + total / 1000000000);
  t->tv_nsec = (long)(total % 1000000000);
  if (t->tv_nsec < 0) {
    t->tv_nsec += 1000000000;
    t->tv_sec -= 1;
  }
}

int dlx_cond_clockwait_by_realtime(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                                   const struct timespec* deadline) {
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(cond, mutex, deadline);
  if (clock != CLOCK_MONOTONIC) return EINVAL; /* as glibc: the two clocks it supports */
  if (deadline->tv_nsec < 0 || deadline->tv_nsec >= 1000000000) return EINVAL;
  struct timespec now_monotonic, realtime_deadline;
  clock_gettime(CLOCK_MONOTONIC, &now_monotonic);
  clock_gettime(CLOCK_REALTIME, &realtime_deadline);
  const int64_t left = ((int64_t)deadline->tv_sec - (int64_t)now_monotonic.tv_sec) * 1000000000 +
                       ((int64_t)deadline->tv_nsec - (int64_t)now_monotonic.tv_nsec);
  if (left <= 0) return ETIMEDOUT;
  add_nanoseconds(&realtime_deadline, left);
  return pthread_cond_timedwait(cond, mutex, &realtime_deadline);
}

typedef int (*clockwait_function)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);
static clockwait_function glibc_clockwait;
static pthread_once_t glibc_clockwait_lookup = PTHREAD_ONCE_INIT;

/* In libc since glibc 2.34, in libpthread for 2.30 to 2.33 (a library that process then has
 * loaded: libdlx_c needs it); GLIBC_2.30 in both. The handles add no reference. */
static void look_up_glibc_clockwait(void) {
  static const char* const libraries[] = {"libc.so.6", "libpthread.so.0"};
  for (size_t i = 0; i < sizeof libraries / sizeof libraries[0] && !glibc_clockwait; i++) {
    void* library = dlopen(libraries[i], RTLD_NOW | RTLD_NOLOAD);
    if (!library) continue;
    glibc_clockwait = (clockwait_function)dlvsym(library, "pthread_cond_clockwait", "GLIBC_2.30");
    dlclose(library);
  }
}

int dlx_glibc_has_clockwait(void) {
  pthread_once(&glibc_clockwait_lookup, look_up_glibc_clockwait);
  return glibc_clockwait != NULL;
}

__attribute__((visibility("hidden"))) int pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                                                 clockid_t clock, const struct timespec* deadline) {
  pthread_once(&glibc_clockwait_lookup, look_up_glibc_clockwait);
  if (glibc_clockwait) return glibc_clockwait(cond, mutex, clock, deadline);
  return dlx_cond_clockwait_by_realtime(cond, mutex, clock, deadline);
}
