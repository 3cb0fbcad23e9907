/*
 * sluice-espeak-engine — one more espeak-ng engine for the espeak plugin, in a process of its
 * own. espeak-ng keeps its state in process globals, so one process synthesises one utterance
 * at a time; the plugin starts these helpers when voices wait for its in-process engine
 * (parameter `engines`), so many voices synthesise on every core. protocol.h is the wire
 * format; docs/providers/espeak.md describes it for users.
 *
 * It reads requests on stdin and answers on stdout, the same Unix socket, one request at a
 * time. It is not meant to be run by hand: it ends when the socket closes, that is, when the
 * host process is gone, and it exits at once on anything but the protocol.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "protocol.h"

enum { REQUESTS = 0, REPLIES = 1 };

/* The voice espeak-ng has selected (empty: none yet): selecting one re-reads its files. */
static char selected_voice[ENGINE_VOICE_CAPACITY] = "";
/* An ABORT came during the synthesis in progress. */
static bool aborted = false;

/* Exits quietly when the host is gone; loudly on a broken protocol. */
static void leave(bool host_gone, const char *why) {
    if (!host_gone) fprintf(stderr, "%s: %s\n", ENGINE_HELPER_NAME, why);
    exit(host_gone ? 0 : 3);
}

static void write_message(uint32_t type, const void *payload, size_t size) {
    engine_header_t header = {type, (uint32_t)size};
    struct iovec parts[2] = {{&header, sizeof header}, {(void *)payload, size}};
    int count = size > 0 ? 2 : 1;
    struct iovec *next = parts;
    while (count > 0) {
        ssize_t written = writev(REPLIES, next, count);
        if (written < 0) {
            if (errno == EINTR) continue;
            leave(true, NULL); /* EPIPE: nobody reads the replies any more */
        }
        while (count > 0 && (size_t)written >= next->iov_len) {
            written -= (ssize_t)next->iov_len;
            next++, count--;
        }
        if (count > 0) {
            next->iov_base = (char *)next->iov_base + written;
            next->iov_len -= (size_t)written;
        }
    }
}

/* Reads exactly `size` bytes; false at end of input before the first byte. */
static bool read_exactly(void *buffer, size_t size) {
    size_t done = 0;
    while (done < size) {
        ssize_t got = read(REQUESTS, (char *)buffer + done, size - done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (done == 0 && got == 0) return false;
            leave(got == 0 || errno == ECONNRESET, "a request ended early");
        }
        done += (size_t)got;
    }
    return true;
}

/* [inside espeak_Synth] Whether an ABORT has come, without waiting for one. */
static void look_for_abort(void) {
    struct pollfd requests = {REQUESTS, POLLIN, 0};
    while (!aborted && poll(&requests, 1, 0) > 0) {
        engine_header_t header;
        if (!read_exactly(&header, sizeof header)) leave(true, NULL);
        if (header.type != ENGINE_ABORT || header.size != 0) leave(false, "a request came during a synthesis");
        aborted = true;
    }
}

/* espeak-ng's synthesis callback: each word event, then the chunk, to the host. */
static int on_samples(short *samples, int count, espeak_EVENT *events) {
    look_for_abort();
    if (aborted) return 1;
    for (const espeak_EVENT *event = events; event != NULL && event->type != espeakEVENT_LIST_TERMINATED; event++) {
        if (event->type != espeakEVENT_WORD) continue;
        engine_word_t word = {event->text_position, event->length, event->sample};
        write_message(ENGINE_WORD, &word, sizeof word);
    }
    if (samples != NULL && count > 0) write_message(ENGINE_AUDIO, samples, (size_t)count * sizeof(short));
    return 0;
}

static espeak_ERROR select_voice(const char *voice) {
    if (selected_voice[0] != '\0' && strcmp(selected_voice, voice) == 0) return EE_OK;
    selected_voice[0] = '\0';
    espeak_ERROR status = engine_select_voice_by_name(voice);
    if (status == EE_OK) snprintf(selected_voice, sizeof selected_voice, "%s", voice);
    return status;
}

static engine_done_t speak(const engine_request_t *request, const char *text) {
    espeak_ERROR status = select_voice(request->voice);
    if (status == EE_OK) status = engine_set_prosody(request);
    if (status != EE_OK) return (engine_done_t){ENGINE_DONE_VOICE_REFUSED, status};
    aborted = false;
    status = espeak_Synth(text, strlen(text) + 1, 0, POS_CHARACTER, 0, ENGINE_SYNTH_FLAGS, NULL, NULL);
    if (aborted) return (engine_done_t){ENGINE_DONE_ABORTED, status};
    if (status != EE_OK) return (engine_done_t){ENGINE_DONE_SYNTH_FAILED, status};
    return (engine_done_t){ENGINE_DONE_OK, EE_OK};
}

int main(void) {
    /* DONT_EXIT: report missing data instead of exiting; the host then sees no READY. */
    const int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, ENGINE_CHUNK_MS, NULL, espeakINITIALIZE_DONT_EXIT);
    if (rate <= 0) leave(false, "espeak-ng could not initialise (is espeak-ng-data installed?)");
    espeak_SetSynthCallback(on_samples);
    engine_ready_t ready = {rate};
    write_message(ENGINE_READY, &ready, sizeof ready);

    char *payload = NULL;
    size_t capacity = 0;
    for (;;) {
        engine_header_t header;
        if (!read_exactly(&header, sizeof header)) return 0; /* the host is gone */
        if (header.size > ENGINE_MESSAGE_LIMIT) leave(false, "a request is too large");
        if (header.size + 1 > capacity) {
            capacity = header.size + 1;
            payload = realloc(payload, capacity);
            if (payload == NULL) leave(false, "out of memory");
        }
        if (header.size > 0 && !read_exactly(payload, header.size)) leave(true, NULL);
        payload[header.size] = '\0';

        if (header.type == ENGINE_ABORT) continue; /* for a synthesis that has just ended */
        if ((header.type != ENGINE_SELECT && header.type != ENGINE_SPEAK) || header.size < sizeof(engine_request_t)) {
            leave(false, "an unknown request");
        }
        engine_request_t request;
        memcpy(&request, payload, sizeof request);
        request.voice[sizeof request.voice - 1] = '\0';
        engine_done_t done;
        if (header.type == ENGINE_SELECT) {
            const espeak_ERROR status = select_voice(request.voice);
            done = (engine_done_t){status == EE_OK ? ENGINE_DONE_OK : ENGINE_DONE_VOICE_REFUSED, status};
        } else {
            done = speak(&request, payload + sizeof request);
        }
        write_message(ENGINE_DONE, &done, sizeof done);
    }
}
