/*
 * What the C reference clients of `scripts/bench jack` share: one clock for timing a process
 * callback, the store its durations go to, the xrun count, and one JSON line of percentiles
 * in the shape `sluice --stats json` prints (`callbackMicroseconds`), so both sides are
 * measured and reported the same way.
 */
#ifndef SLUICE_CALLBACK_STATS_H
#define SLUICE_CALLBACK_STATS_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* Callbacks whose duration is kept; later ones are counted but not kept. */
#define CALLBACK_STATS_MAX (1 << 20)

extern uint32_t *callback_stats_durations; /* nanoseconds per callback */
extern atomic_long callback_stats_count;
extern atomic_int callback_stats_xruns;

/* [any-thread] CLOCK_MONOTONIC in nanoseconds (a vDSO read: no system call, no lock). */
static inline uint64_t callback_stats_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* [control-thread] Allocates the duration store; before activation. Returns 0 when out of memory. */
int callback_stats_start(void);

/* [audio-thread] Notes one callback that began at `started`: no allocation, no lock, no I/O. */
static inline void callback_stats_record(uint64_t started) {
    long index = atomic_load_explicit(&callback_stats_count, memory_order_relaxed);
    if (index < CALLBACK_STATS_MAX) callback_stats_durations[index] = (uint32_t)(callback_stats_nanoseconds() - started);
    atomic_store_explicit(&callback_stats_count, index + 1, memory_order_release);
}

/* [notification-thread] A jack_set_xrun_callback callback: counts the xrun. */
int callback_stats_on_xrun(void *arg);

/*
 * [control-thread] After deactivation: prints one JSON object on stdout,
 *   {"callbackMicroseconds": {"p50": …, "p99": …, "p99.9": …, "max": …, "count": …}, "xruns": N}
 * with `"cpuSeconds": S` added when `cpu_seconds` is not negative, and frees the store.
 * Returns 0 (printing nothing) when no callback ran.
 */
int callback_stats_finish(double cpu_seconds);

#endif
