/*
 * jack-passthrough: the reference a live Sluice chain (jack.source -> fader -> jack.sink) is
 * compared with in `scripts/bench jack`: a minimal C JACK client that copies each input port
 * to the matching output port inside the process callback, as every JACK effect does, timing
 * each callback like jack-copy-client (CLOCK_MONOTONIC around the work, durations in a
 * preallocated array).
 *
 *   jack-passthrough --server NAME [--client NAME] [--channels C] [--seconds S]
 *                    [--connect-in PORT]... [--connect-out PORT]...
 *
 * Prints one JSON object on stdout when done:
 *   {"callbackMicroseconds": {"p50": …, "p99": …, "p99.9": …, "max": …, "count": …},
 *    "xruns": N, "cpuSeconds": S}
 */
#include <errno.h>
#include "callback_stats.h"
#include <jack/jack.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHANNELS 8

static jack_client_t *client;
static jack_port_t *inputs[MAX_CHANNELS], *outputs[MAX_CHANNELS];
static int channels = 1;

/* [audio-thread] No allocation, no locks, no I/O. */
static int process(jack_nframes_t nframes, void *arg) {
    (void)arg;
    uint64_t started = callback_stats_nanoseconds();
    for (int channel = 0; channel < channels; channel++) {
        const float *in = jack_port_get_buffer(inputs[channel], nframes);
        float *out = jack_port_get_buffer(outputs[channel], nframes);
        memcpy(out, in, sizeof(float) * nframes);
    }
    callback_stats_record(started);
    return 0;
}

int main(int argc, char **argv) {
    const char *server = NULL, *name = "jack-passthrough";
    const char *connect_in[MAX_CHANNELS] = {0}, *connect_out[MAX_CHANNELS] = {0};
    int ins = 0, outs = 0;
    double seconds = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--server")) server = argv[i + 1];
        else if (!strcmp(argv[i], "--client")) name = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--channels")) channels = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--connect-in") && ins < MAX_CHANNELS) connect_in[ins++] = argv[i + 1];
        else if (!strcmp(argv[i], "--connect-out") && outs < MAX_CHANNELS) connect_out[outs++] = argv[i + 1];
        else { fprintf(stderr, "jack-passthrough: unknown option %s\n", argv[i]); return 2; }
    }
    if (channels < 1 || channels > MAX_CHANNELS) { fprintf(stderr, "jack-passthrough: 1-8 channels\n"); return 2; }

    jack_status_t status;
    jack_options_t options = server ? (JackNoStartServer | JackServerName) : JackNoStartServer;
    client = jack_client_open(name, options, &status, server);
    if (!client) { fprintf(stderr, "jack-passthrough: cannot open a client (status 0x%x)\n", status); return 1; }
    for (int channel = 0; channel < channels; channel++) {
        char in_name[32], out_name[32];
        snprintf(in_name, sizeof in_name, "in_%d", channel + 1);
        snprintf(out_name, sizeof out_name, "out_%d", channel + 1);
        inputs[channel] = jack_port_register(client, in_name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
        outputs[channel] = jack_port_register(client, out_name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
        if (!inputs[channel] || !outputs[channel]) { fprintf(stderr, "jack-passthrough: cannot register ports\n"); return 1; }
    }
    if (!callback_stats_start()) { fprintf(stderr, "jack-passthrough: out of memory\n"); return 1; }
    jack_set_process_callback(client, process, NULL);
    jack_set_xrun_callback(client, callback_stats_on_xrun, NULL);
    if (jack_activate(client)) { fprintf(stderr, "jack-passthrough: cannot activate\n"); return 1; }
    for (int i = 0; i < ins; i++) {
        int result = jack_connect(client, connect_in[i], jack_port_name(inputs[i % channels]));
        if (result && result != EEXIST) { fprintf(stderr, "jack-passthrough: cannot connect %s\n", connect_in[i]); return 1; }
    }
    for (int i = 0; i < outs; i++) {
        int result = jack_connect(client, jack_port_name(outputs[i % channels]), connect_out[i]);
        if (result && result != EEXIST) { fprintf(stderr, "jack-passthrough: cannot connect %s\n", connect_out[i]); return 1; }
    }

    usleep((useconds_t)(seconds * 1e6));
    jack_deactivate(client);

    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec * 1e-6
        + (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec * 1e-6;
    if (!callback_stats_finish(cpu)) { fprintf(stderr, "jack-passthrough: no callbacks ran\n"); return 1; }
    jack_client_close(client);
    return 0;
}
