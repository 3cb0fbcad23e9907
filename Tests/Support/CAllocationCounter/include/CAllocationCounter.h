// Counts heap allocations made by the calling thread, for tests that prove a code path does
// not allocate. Interposes malloc and friends in the test executable.
#ifndef SLUICE_ALLOCATION_COUNTER_H
#define SLUICE_ALLOCATION_COUNTER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/// Starts counting this thread's allocations from zero.
void sluice_allocation_counter_begin(void);

/// Stops counting on this thread and returns how many allocations it made since `begin`.
uint64_t sluice_allocation_counter_end(void);

/// True when this executable's malloc is the counting one. Sanitizer runtimes (TSan, RTSan)
/// bring their own malloc, which wins over ours; counting is then unavailable.
bool sluice_allocation_counter_is_active(void);

/// Starts counting, from zero, the allocations `thread` makes (a thread the test does not run
/// code on, such as JACK's process thread). One thread at a time.
void sluice_allocation_counter_watch(pthread_t thread);

/// Allocations the watched thread has made so far.
uint64_t sluice_allocation_counter_watched(void);

/// Stops watching and returns the watched thread's count.
uint64_t sluice_allocation_counter_unwatch(void);

/// True when a sanitizer runtime (TSan, ASan, RTSan) is linked into this executable.
bool sluice_sanitizer_runtime_present(void);

#endif
