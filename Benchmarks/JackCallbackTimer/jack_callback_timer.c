/*
 * Times any JACK client's process callback from outside, so two programs are measured the
 * same way: preloaded (LD_PRELOAD), it wraps the first jack_set_process_callback of the
 * process, notes each callback's duration (callback_stats_record: no allocation, no lock),
 * and when the process exits writes the stats line `callback_stats_finish` prints to the file
 * JACK_CALLBACK_TIMER_OUTPUT names. `scripts/bench plugins` runs `sluice run` and `jalv`
 * under it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <jack/jack.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "callback_stats.h"

typedef int (*set_process_callback_function)(jack_client_t *, JackProcessCallback, void *);

static JackProcessCallback timed_callback;
static void *timed_argument;

static int timing_callback(jack_nframes_t frames, void *argument) {
    (void)argument;
    uint64_t started = callback_stats_nanoseconds();
    int result = timed_callback(frames, timed_argument);
    callback_stats_record(started);
    return result;
}

int jack_set_process_callback(jack_client_t *client, JackProcessCallback callback, void *argument) {
    set_process_callback_function real = (set_process_callback_function)dlsym(RTLD_NEXT, "jack_set_process_callback");
    if (real == NULL) return -1;
    /* Only the process's first client is timed: the one the benchmark compares. */
    if (timed_callback != NULL || callback == NULL || !callback_stats_start()) return real(client, callback, argument);
    timed_callback = callback;
    timed_argument = argument;
    return real(client, timing_callback, NULL);
}

__attribute__((destructor)) static void write_stats(void) {
    const char *path = getenv("JACK_CALLBACK_TIMER_OUTPUT");
    if (path == NULL || callback_stats_durations == NULL) return;
    fflush(stdout);
    int file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (file < 0) return;
    dup2(file, STDOUT_FILENO);
    close(file);
    callback_stats_finish(-1);
    fflush(stdout);
}
