#include "callback_stats.h"

#include <stdio.h>
#include <stdlib.h>

uint32_t *callback_stats_durations;
atomic_long callback_stats_count;
atomic_int callback_stats_xruns;

int callback_stats_start(void) {
    callback_stats_durations = calloc(CALLBACK_STATS_MAX, sizeof(uint32_t));
    return callback_stats_durations != NULL;
}

int callback_stats_on_xrun(void *arg) {
    (void)arg;
    atomic_fetch_add_explicit(&callback_stats_xruns, 1, memory_order_relaxed);
    return 0;
}

static int compare(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted nanoseconds, in microseconds. */
static double percentile(const uint32_t *sorted, long count, double p) {
    long index = (long)(p * (double)count);
    if (index > count - 1) index = count - 1;
    return sorted[index] / 1000.0;
}

int callback_stats_finish(double cpu_seconds) {
    long count = atomic_load_explicit(&callback_stats_count, memory_order_acquire);
    if (count > CALLBACK_STATS_MAX) count = CALLBACK_STATS_MAX;
    uint32_t *durations = callback_stats_durations;
    callback_stats_durations = NULL;
    if (count == 0) { free(durations); return 0; }
    qsort(durations, (size_t)count, sizeof(uint32_t), compare);
    printf("{\"callbackMicroseconds\": {\"p50\": %.3f, \"p99\": %.3f, \"p99.9\": %.3f, \"max\": %.3f, \"count\": %ld}, "
           "\"xruns\": %d",
           percentile(durations, count, 0.5), percentile(durations, count, 0.99),
           percentile(durations, count, 0.999), durations[count - 1] / 1000.0, count,
           atomic_load(&callback_stats_xruns));
    if (cpu_seconds >= 0) printf(", \"cpuSeconds\": %.4f", cpu_seconds);
    printf("}\n");
    free(durations);
    return 1;
}
