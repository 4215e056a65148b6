/* Shared checking helpers for conformance programs.
 *
 * Every program counts failed expectations and exits non-zero with a "FAIL ..."
 * line per failure, so the harness can show the first one. Indirect functions
 * bump the declare-target counter `dev_calls`; reading it back with
 * `target update from` proves the DEVICE copy ran (the host copy bumps the
 * host's variable, which the update then overwrites).
 */
#ifndef CONFORMANCE_H
#define CONFORMANCE_H
#include <omp.h>
#include <stdio.h>

static int conf_failures;

#define EXPECT_EQ(got, want)                                                            \
  do {                                                                                  \
    long long conf_g_ = (long long)(got), conf_w_ = (long long)(want);                  \
    if (conf_g_ != conf_w_) {                                                           \
      fprintf(stderr, "FAIL %s:%d: %s is %lld, expected %lld\n", __FILE__, __LINE__,    \
              #got, conf_g_, conf_w_);                                                  \
      conf_failures++;                                                                  \
    }                                                                                   \
  } while (0)

#define EXPECT_TRUE(cond)                                                               \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                   \
      conf_failures++;                                                                  \
    }                                                                                   \
  } while (0)

/* Prints PASS and returns 0, or a summary line and 1. */
#define CONF_RESULT()                                                                   \
  (conf_failures ? (fprintf(stderr, "FAIL: %d check(s) failed\n", conf_failures), 1)    \
                 : (printf("PASS\n"), 0))
#endif
