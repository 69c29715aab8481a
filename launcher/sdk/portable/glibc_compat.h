/* SPDX-License-Identifier: Apache-2.0 */
/* What glibc_compat.c offers besides the glibc symbols it answers, for its test
 * (tests/portable/glibc_compat_test.c). Hidden: nothing here is exported by libdlx_c. */
#pragma once
#include <pthread.h>
#include <time.h>

/* pthread_cond_clockwait as glibc 2.28 can do it: CLOCK_REALTIME as is, a CLOCK_MONOTONIC
 * deadline turned into a realtime one when the wait starts; EINVAL for another clock or a bad
 * deadline, ETIMEDOUT for one already passed. */
__attribute__((visibility("hidden"))) int dlx_cond_clockwait_by_realtime(pthread_cond_t* cond,
                                                                         pthread_mutex_t* mutex, clockid_t clock,
                                                                         const struct timespec* deadline);

/* Non-zero when the process's glibc has pthread_cond_clockwait (2.30 and later), which the
 * library's own then calls. */
__attribute__((visibility("hidden"))) int dlx_glibc_has_clockwait(void);
