/*
 * jack-impulse-probe: measures, in frames, the delay a JACK client or chain adds between an
 * input port and an output port, as a JACK user would: two independent clients in one
 * process, `<prefix>-send` (one output port `out`) and `<prefix>-recv` (one input port `in`),
 * so JACK orders them around whatever sits between them. The sender writes a one-sample
 * impulse of 1.0 every `interval` frames of JACK time; the receiver stamps every sample that
 * rises above the threshold with JACK time. Wired directly, the delay is 0.
 *
 *   jack-impulse-probe --server NAME (--send-to PORT --receive-from PORT | --direct)
 *                      [--prefix P] [--seconds S] [--interval N] [--threshold X] [--wait-ports S]
 *
 * Prints one JSON object on stdout:
 *   {"sent":N,"received":M,"delays":[...],"medianDelay":D,"minDelay":A,"maxDelay":B,
 *    "xruns":X,"periodFrames":P,"sampleRate":R}
 * Exit 0 when it ran (the caller judges the figures), 1 with a message on stderr when the
 * server or a port to connect is missing.
 */
#include <errno.h>
#include <jack/jack.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 100000

static jack_client_t *sender, *receiver;
static jack_port_t *out_port, *in_port;
static uint64_t *sent_times, *received_times;   /* preallocated before activation */
static atomic_int sent_count, received_count, xruns;
static atomic_int armed;                         /* set once connections settle */
static uint32_t interval = 4801;
static float threshold = 0.5f;
static float previous = 0.0f;

/* [audio-thread] Writes an impulse where JACK time is a multiple of `interval`. */
static int send_process(jack_nframes_t nframes, void *arg) {
    (void)arg;
    float *out = jack_port_get_buffer(out_port, nframes);
    memset(out, 0, sizeof(float) * nframes);
    if (!atomic_load(&armed)) return 0;
    jack_nframes_t start = jack_last_frame_time(sender);
    for (jack_nframes_t i = 0; i < nframes; i++) {
        uint64_t t = (uint64_t)start + i;
        if (t % interval == 0) {
            out[i] = 1.0f;
            int n = atomic_load(&sent_count);
            if (n < MAX_EVENTS) {
                sent_times[n] = t;
                atomic_store(&sent_count, n + 1);
            }
        }
    }
    return 0;
}

/* [audio-thread] Stamps every rising edge above the threshold. */
static int receive_process(jack_nframes_t nframes, void *arg) {
    (void)arg;
    const float *in = jack_port_get_buffer(in_port, nframes);
    jack_nframes_t start = jack_last_frame_time(receiver);
    for (jack_nframes_t i = 0; i < nframes; i++) {
        float value = fabsf(in[i]);
        if (value > threshold && previous <= threshold && atomic_load(&armed)) {
            int n = atomic_load(&received_count);
            if (n < MAX_EVENTS) {
                received_times[n] = (uint64_t)start + i;
                atomic_store(&received_count, n + 1);
            }
        }
        previous = value;
    }
    return 0;
}

/* [notification-thread] */
static int on_xrun(void *arg) {
    (void)arg;
    atomic_fetch_add(&xruns, 1);
    return 0;
}

static jack_client_t *open_client(const char *name, const char *server) {
    jack_status_t status = 0;
    jack_client_t *client = NULL;
    /* PipeWire's JACK layer now and then refuses a client while it sets up another
     * (JackInitFailure, seen once in a CI run after the whole suite): try again for up to a
     * second before giving up. A missing server fails at once. */
    for (int attempt = 0; attempt < 20 && client == NULL; attempt++) {
        client = jack_client_open(name, JackNoStartServer | JackServerName | JackUseExactName, &status, server);
        if (client != NULL || !(status & JackInitFailure)) break;
        usleep(50 * 1000);
    }
    if (!client) {
        fprintf(stderr, "jack-impulse-probe: cannot open client '%s' on server '%s' (status 0x%x)\n", name, server, status);
        exit(1);
    }
    return client;
}

/* Waits up to `seconds` for a port to exist. */
static int wait_for_port(jack_client_t *client, const char *name, double seconds) {
    for (int i = 0; i < (int)(seconds * 100); i++) {
        if (jack_port_by_name(client, name)) return 1;
        usleep(10000);
    }
    return jack_port_by_name(client, name) != NULL;
}

static void connect_or_die(jack_client_t *client, const char *from, const char *to, double wait) {
    const char *theirs = strchr(from, ':') && strncmp(from, jack_get_client_name(client), strlen(jack_get_client_name(client))) != 0 ? from : to;
    if (!wait_for_port(client, theirs, wait)) {
        fprintf(stderr, "jack-impulse-probe: no port named '%s' appeared within %.1f s\n", theirs, wait);
        exit(1);
    }
    int result = jack_connect(client, from, to);
    if (result != 0 && result != EEXIST) {
        fprintf(stderr, "jack-impulse-probe: cannot connect '%s' to '%s'\n", from, to);
        exit(1);
    }
}

static int compare(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *server = NULL, *send_to = NULL, *receive_from = NULL, *prefix = "impulse";
    double seconds = 3, wait = 5;
    int direct = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--server") && i + 1 < argc) server = argv[++i];
        else if (!strcmp(argv[i], "--send-to") && i + 1 < argc) send_to = argv[++i];
        else if (!strcmp(argv[i], "--receive-from") && i + 1 < argc) receive_from = argv[++i];
        else if (!strcmp(argv[i], "--prefix") && i + 1 < argc) prefix = argv[++i];
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--interval") && i + 1 < argc) interval = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threshold") && i + 1 < argc) threshold = (float)atof(argv[++i]);
        else if (!strcmp(argv[i], "--wait-ports") && i + 1 < argc) wait = atof(argv[++i]);
        else if (!strcmp(argv[i], "--direct")) direct = 1;
        else {
            fprintf(stderr, "usage: jack-impulse-probe --server NAME (--send-to PORT --receive-from PORT | --direct) "
                            "[--prefix P] [--seconds S] [--interval N] [--threshold X] [--wait-ports S]\n");
            return 2;
        }
    }
    if (!server || (!direct && (!send_to || !receive_from)) || interval == 0) {
        fprintf(stderr, "jack-impulse-probe: --server and either --direct or both --send-to and --receive-from are needed\n");
        return 2;
    }
    sent_times = calloc(MAX_EVENTS, sizeof(uint64_t));
    received_times = calloc(MAX_EVENTS, sizeof(uint64_t));
    char send_name[128], recv_name[128], out_full[300], in_full[300];
    snprintf(send_name, sizeof send_name, "%s-send", prefix);
    snprintf(recv_name, sizeof recv_name, "%s-recv", prefix);
    sender = open_client(send_name, server);
    receiver = open_client(recv_name, server);
    out_port = jack_port_register(sender, "out", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
    in_port = jack_port_register(receiver, "in", JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
    jack_set_process_callback(sender, send_process, NULL);
    jack_set_process_callback(receiver, receive_process, NULL);
    jack_set_xrun_callback(receiver, on_xrun, NULL);
    if (jack_activate(sender) || jack_activate(receiver)) {
        fprintf(stderr, "jack-impulse-probe: cannot activate the clients\n");
        return 1;
    }
    snprintf(out_full, sizeof out_full, "%s:out", send_name);
    snprintf(in_full, sizeof in_full, "%s:in", recv_name);
    if (direct) {
        connect_or_die(sender, out_full, in_full, wait);
    } else {
        connect_or_die(sender, out_full, send_to, wait);
        connect_or_die(receiver, receive_from, in_full, wait);
    }
    usleep(200000);  /* connections settle before the first impulse counts */
    atomic_store(&armed, 1);
    usleep((useconds_t)(seconds * 1e6));
    atomic_store(&armed, 0);
    usleep(100000);  /* the last impulses arrive */
    int sent = atomic_load(&sent_count), received = atomic_load(&received_count);
    jack_nframes_t period = jack_get_buffer_size(sender), rate = jack_get_sample_rate(sender);
    jack_deactivate(receiver);
    jack_deactivate(sender);

    /* Each arrival pairs with the latest impulse sent at or before it. */
    int64_t *delays = calloc((size_t)received + 1, sizeof(int64_t));
    int count = 0;
    for (int r = 0, s = 0; r < received; r++) {
        while (s + 1 < sent && sent_times[s + 1] <= received_times[r]) s++;
        if (sent > 0 && sent_times[s] <= received_times[r]) delays[count++] = (int64_t)(received_times[r] - sent_times[s]);
    }
    printf("{\"sent\":%d,\"received\":%d,\"delays\":[", sent, received);
    for (int i = 0; i < count; i++) printf("%s%lld", i ? "," : "", (long long)delays[i]);
    printf("]");
    if (count > 0) {
        int64_t *sorted = calloc((size_t)count, sizeof(int64_t));
        memcpy(sorted, delays, sizeof(int64_t) * (size_t)count);
        qsort(sorted, (size_t)count, sizeof(int64_t), compare);
        printf(",\"medianDelay\":%lld,\"minDelay\":%lld,\"maxDelay\":%lld", (long long)sorted[count / 2],
               (long long)sorted[0], (long long)sorted[count - 1]);
        free(sorted);
    } else {
        printf(",\"medianDelay\":null,\"minDelay\":null,\"maxDelay\":null");
    }
    printf(",\"xruns\":%d,\"periodFrames\":%u,\"sampleRate\":%u}\n", atomic_load(&xruns), period, rate);
    jack_client_close(receiver);
    jack_client_close(sender);
    return 0;
}
