/*
 * What the C reference clients of `scripts/bench jack` share: one clock for timing a process
 * callback, and one JSON line of percentiles, in the shape `sluice --stats json` prints
 * (`callbackMicroseconds`), so both sides are measured and reported the same way.
 */
#ifndef SLUICE_CALLBACK_STATS_H
#define SLUICE_CALLBACK_STATS_H

#include <stdint.h>

/* [any-thread] CLOCK_MONOTONIC in nanoseconds (a vDSO read: no system call, no lock). */
uint64_t callback_stats_nanoseconds(void);

/*
 * Sorts `durations` (nanoseconds, `count` of them) and prints one JSON object on stdout:
 *   {"callbackMicroseconds": {"p50": …, "p99": …, "p99.9": …, "max": …, "count": …}, "xruns": N}
 * with `"cpuSeconds": S` added when `cpu_seconds` is not negative.
 */
void callback_stats_print(uint32_t *durations, long count, int xruns, double cpu_seconds);

#endif
