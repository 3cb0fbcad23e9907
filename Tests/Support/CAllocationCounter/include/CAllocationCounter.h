// Counts heap allocations made by the calling thread, for tests that prove a code path does
// not allocate. Interposes malloc and friends in the test executable.
#ifndef SLUICE_ALLOCATION_COUNTER_H
#define SLUICE_ALLOCATION_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

/// Starts counting this thread's allocations from zero.
void sluice_allocation_counter_begin(void);

/// Stops counting on this thread and returns how many allocations it made since `begin`.
uint64_t sluice_allocation_counter_end(void);

/// True when this executable's malloc is the counting one. Sanitizer runtimes (TSan, RTSan)
/// bring their own malloc, which wins over ours; counting is then unavailable.
bool sluice_allocation_counter_is_active(void);

/// True when a sanitizer runtime (TSan, ASan, RTSan) is linked into this executable.
bool sluice_sanitizer_runtime_present(void);

#endif
