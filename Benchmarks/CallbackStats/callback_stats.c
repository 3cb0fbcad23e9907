#include "callback_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t callback_stats_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
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

void callback_stats_print(uint32_t *durations, long count, int xruns, double cpu_seconds) {
    qsort(durations, (size_t)count, sizeof(uint32_t), compare);
    printf("{\"callbackMicroseconds\": {\"p50\": %.3f, \"p99\": %.3f, \"p99.9\": %.3f, \"max\": %.3f, \"count\": %ld}, "
           "\"xruns\": %d",
           percentile(durations, count, 0.5), percentile(durations, count, 0.99),
           percentile(durations, count, 0.999), durations[count - 1] / 1000.0, count, xruns);
    if (cpu_seconds >= 0) printf(", \"cpuSeconds\": %.4f", cpu_seconds);
    printf("}\n");
}
