/* SPDX-License-Identifier: Apache-2.0 */
/* The portable libdlx_c's answers to what glibc 2.28 lacks (launcher/sdk/portable/glibc_compat.c),
 * linked into this program as into the library: the math functions under their first version
 * compute what glibc's current ones do and set errno; pthread_cond_clockwait is glibc's own where
 * glibc has it; the wait glibc 2.28 gets (a realtime deadline) times out no earlier than its
 * monotonic deadline, wakes when signalled, and refuses what glibc refuses. Prints each check and
 * exits 1 after the first that fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glibc_compat.h"

/* This program's exp, log and pow are glibc_compat.c's (its definitions come first). */
double exp(double x);
double log(double x);
double pow(double x, double y);

static int failures = 0;

static void check(int ok, const char* what) {
  printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  if (!ok) failures++;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static int64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static struct timespec monotonic_in(int64_t nanoseconds) {
  const int64_t at = monotonic_ns() + nanoseconds;
  struct timespec deadline = {(time_t)(at / 1000000000), (long)(at % 1000000000)};
  return deadline;
}

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int signalled = 0;

static void* signal_soon(void* unused) {
  (void)unused;
  const struct timespec pause = {0, 50 * 1000 * 1000};
  nanosleep(&pause, NULL);
  pthread_mutex_lock(&mutex);
  signalled = 1;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&mutex);
  return NULL;
}

int main(void) {
  /* Values whose correctly rounded results are known; volatile: computed at run time. */
  volatile double one = 1.0, two = 2.0, ten = 10.0, huge = 1000.0, e = 2.718281828459045;
  check(same_bits(exp(one), 2.718281828459045), "exp(1) under GLIBC_2.2.5 is e");
  check(same_bits(log(e), 1.0), "log(e) under GLIBC_2.2.5 is 1");
  check(same_bits(pow(two, ten), 1024.0), "pow(2, 10) under GLIBC_2.2.5 is 1024");
  check(same_bits(exp(-one), 0.36787944117144233), "exp(-1) is 1/e");
  errno = 0;
  const double overflow = exp(huge);
  check(overflow > 1e308 && errno == ERANGE, "exp(1000) overflows to infinity with errno ERANGE");
  errno = 0;
  const double pole = log(0.0 * one);
  check(pole < -1e308 && errno == ERANGE, "log(0) is -infinity with errno ERANGE");

  check(dlx_glibc_has_clockwait(), "this glibc (2.30 or later) has pthread_cond_clockwait: the library calls it");

  pthread_mutex_lock(&mutex);
  int64_t started = monotonic_ns();
  struct timespec deadline = monotonic_in(100 * 1000 * 1000);
  int status = pthread_cond_clockwait(&cond, &mutex, CLOCK_MONOTONIC, &deadline);
  check(status == ETIMEDOUT && monotonic_ns() - started >= 100 * 1000 * 1000,
        "pthread_cond_clockwait (glibc's, through the library's) times out at its monotonic deadline");

  /* The wait glibc 2.28 gets. */
  started = monotonic_ns();
  deadline = monotonic_in(100 * 1000 * 1000);
  do {
    status = dlx_cond_clockwait_by_realtime(&cond, &mutex, CLOCK_MONOTONIC, &deadline);
  } while (status == 0); /* a spurious wake-up: wait again, as libstdc++ does */
  check(status == ETIMEDOUT && monotonic_ns() - started >= 100 * 1000 * 1000,
        "without glibc's: a monotonic wait of 100 ms times out, not before 100 ms");
  deadline = monotonic_in(-1000);
  check(dlx_cond_clockwait_by_realtime(&cond, &mutex, CLOCK_MONOTONIC, &deadline) == ETIMEDOUT,
        "without glibc's: a monotonic deadline already passed is ETIMEDOUT at once");
  deadline = monotonic_in(1000);
  check(dlx_cond_clockwait_by_realtime(&cond, &mutex, CLOCK_PROCESS_CPUTIME_ID, &deadline) == EINVAL,
        "without glibc's: a clock other than CLOCK_REALTIME and CLOCK_MONOTONIC is EINVAL");
  struct timespec bad = deadline;
  bad.tv_nsec = 1000000000;
  check(dlx_cond_clockwait_by_realtime(&cond, &mutex, CLOCK_MONOTONIC, &bad) == EINVAL,
        "without glibc's: a deadline with 10^9 nanoseconds is EINVAL");
  struct timespec realtime;
  clock_gettime(CLOCK_REALTIME, &realtime);
  realtime.tv_nsec = (realtime.tv_nsec + 20 * 1000 * 1000) % 1000000000;
  if (realtime.tv_nsec < 20 * 1000 * 1000) realtime.tv_sec++;
  do {
    status = dlx_cond_clockwait_by_realtime(&cond, &mutex, CLOCK_REALTIME, &realtime);
  } while (status == 0);
  check(status == ETIMEDOUT, "without glibc's: a CLOCK_REALTIME deadline is pthread_cond_timedwait's");

  pthread_t signaller;
  pthread_create(&signaller, NULL, signal_soon, NULL);
  started = monotonic_ns();
  deadline = monotonic_in(10LL * 1000 * 1000 * 1000);
  status = 0;
  while (!signalled && status == 0) status = dlx_cond_clockwait_by_realtime(&cond, &mutex, CLOCK_MONOTONIC, &deadline);
  check(status == 0 && signalled && monotonic_ns() - started < 9LL * 1000 * 1000 * 1000,
        "without glibc's: a signal wakes a wait of 10 s");
  pthread_mutex_unlock(&mutex);
  pthread_join(signaller, NULL);

  printf("# glibc_compat_test: %d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
