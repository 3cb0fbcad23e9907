/*
 * jack-copy-client: the reference for `scripts/bench jack`. A minimal C JACK client doing what
 * jack.sink's callback does — copy a period of interleaved float audio out of a lock-free ring
 * (here JACK's own jack_ringbuffer) and spread it over its output ports — and timing each
 * callback the same way (CLOCK_MONOTONIC around the copy, durations kept in a preallocated
 * array). A feeder thread keeps the ring full with a sine.
 *
 *   jack-copy-client --server NAME [--client NAME] [--seconds S] [--channels C]
 *
 * Prints one JSON object on stdout when done, in jack.sink's `--stats json` shape:
 *   {"callbackMicroseconds": {"p50": …, "p99": …, "p99.9": …, "max": …, "count": …}, "xruns": N}
 */
#include "callback_stats.h"
#include <jack/jack.h>
#include <jack/ringbuffer.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHANNELS 8
#define MAX_FRAMES 8192

static jack_client_t *client;
static jack_port_t *ports[MAX_CHANNELS];
static int channels = 1;
static jack_ringbuffer_t *ring;
static float *scratch;            /* one period, interleaved; allocated before activation */
static atomic_int running = 1;

/* [audio-thread] No allocation, no locks, no I/O. */
static int process(jack_nframes_t nframes, void *arg) {
    (void)arg;
    uint64_t started = callback_stats_nanoseconds();
    if (nframes > MAX_FRAMES) nframes = MAX_FRAMES;
    size_t wanted = (size_t)nframes * (size_t)channels * sizeof(float);
    size_t got = jack_ringbuffer_read(ring, (char *)scratch, wanted);
    if (got < wanted) memset((char *)scratch + got, 0, wanted - got);
    for (int channel = 0; channel < channels; channel++) {
        float *out = jack_port_get_buffer(ports[channel], nframes);
        const float *in = scratch + channel;
        for (jack_nframes_t frame = 0; frame < nframes; frame++, in += channels) out[frame] = *in;
    }
    callback_stats_record(started);
    return 0;
}

/* Keeps the ring full of a 440 Hz sine at the server's rate. */
static void *feed(void *arg) {
    double rate = (double)jack_get_sample_rate(client);
    double phase = 0, step = 2 * M_PI * 440 / rate;
    float frame[MAX_CHANNELS];
    (void)arg;
    while (atomic_load(&running)) {
        while (jack_ringbuffer_write_space(ring) >= sizeof(float) * (size_t)channels) {
            float sample = (float)(0.25 * sin(phase));
            phase = fmod(phase + step, 2 * M_PI);
            for (int channel = 0; channel < channels; channel++) frame[channel] = sample;
            jack_ringbuffer_write(ring, (const char *)frame, sizeof(float) * (size_t)channels);
        }
        usleep(1000);
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *server = NULL, *name = "jack-copy-client";
    double seconds = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--server")) server = argv[i + 1];
        else if (!strcmp(argv[i], "--client")) name = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--channels")) channels = atoi(argv[i + 1]);
        else { fprintf(stderr, "jack-copy-client: unknown option %s\n", argv[i]); return 2; }
    }
    if (channels < 1 || channels > MAX_CHANNELS) { fprintf(stderr, "jack-copy-client: 1-8 channels\n"); return 2; }

    jack_status_t status;
    jack_options_t options = server ? (JackNoStartServer | JackServerName) : JackNoStartServer;
    client = jack_client_open(name, options, &status, server);
    if (!client) { fprintf(stderr, "jack-copy-client: cannot open a client (status 0x%x)\n", status); return 1; }
    for (int channel = 0; channel < channels; channel++) {
        char port_name[32];
        snprintf(port_name, sizeof port_name, "out_%d", channel + 1);
        ports[channel] = jack_port_register(client, port_name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
        if (!ports[channel]) { fprintf(stderr, "jack-copy-client: cannot register %s\n", port_name); return 1; }
    }
    /* A second of audio, as jack.sink's ring holds up to max-buffered. */
    ring = jack_ringbuffer_create(sizeof(float) * (size_t)channels * jack_get_sample_rate(client));
    scratch = calloc((size_t)MAX_FRAMES * (size_t)channels, sizeof(float));
    if (!ring || !scratch || !callback_stats_start()) { fprintf(stderr, "jack-copy-client: out of memory\n"); return 1; }
    jack_ringbuffer_mlock(ring);

    pthread_t feeder;
    pthread_create(&feeder, NULL, feed, NULL);
    while (jack_ringbuffer_write_space(ring) >= sizeof(float) * (size_t)channels) usleep(1000);
    jack_set_process_callback(client, process, NULL);
    jack_set_xrun_callback(client, callback_stats_on_xrun, NULL);
    if (jack_activate(client)) { fprintf(stderr, "jack-copy-client: cannot activate\n"); return 1; }

    usleep((useconds_t)(seconds * 1e6));
    jack_deactivate(client);
    atomic_store(&running, 0);
    pthread_join(feeder, NULL);

    if (!callback_stats_finish(-1)) { fprintf(stderr, "jack-copy-client: no callbacks ran\n"); return 1; }
    jack_client_close(client);
    jack_ringbuffer_free(ring);
    free(scratch);
    return 0;
}
