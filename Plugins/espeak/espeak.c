/*
 * espeak — Sluice's default speech provider, a plugin in plain C: text in, espeak-ng's speech
 * out, as S16LE mono PCM at the engine's rate (22050 Hz), streamed while it is synthesised.
 * docs/providers/espeak.md describes it for users.
 *
 * How it works
 * ------------
 * The text calls queue utterances; each instance has one synthesis thread that runs
 * espeak_Synth on each complete utterance, in order. espeak-ng calls back with about 20 ms
 * of samples at a time; the callback copies them into the instance's ring (at most `buffer`
 * seconds) and, while the ring is full, waits for `read` to make room: backpressure, so
 * memory stays bounded however long the text, and audio reaches `read` while the sentence
 * is still being synthesised.
 *
 * espeak-ng keeps its state in process globals and is not reentrant: engines.c holds the
 * process's engine and the helper processes that are more engines, and hands them to the
 * synthesis threads one utterance at a time. A synthesis alone waits for its ring to drain,
 * keeping its engine. When other instances wait for an engine (many voices in one process),
 * a full ring does not hold them up: the holder spills what does not fit into an overflow
 * buffer and finishes its utterance at full speed, and `read` moves the overflow into the
 * ring as it frees room. The overflow holds at most the rest of one utterance, and only while
 * others wait, so memory stays bounded by the longest utterance (counter
 * `peak-overflow-bytes`).
 *
 * Threads: the text functions and destroy run on the [control-thread], `read` on the
 * [source-thread], the synthesis thread is the plugin's own, `cancel` and `get_counters` come
 * from [any-thread]. One mutex per instance guards the queue and the ring; counters and the
 * stop flags are atomics. `read` never waits for text; it waits at most READ_WAIT_NS for audio
 * of an utterance whose text is complete, so the host seldom has to poll.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <espeak-ng/speak_lib.h>
#include <sluice/sluice.h>

#include "engines.h"

/* espeak-ng hands over native `short`s; the output is declared S16LE. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the espeak plugin passes espeak-ng's native samples on as S16LE: little-endian hosts only"
#endif

/* MARK: Descriptor */

static const sluice_port_descriptor_t espeak_outputs[] = {
    {"out", SLUICE_MEDIUM_BYTES, "S16LE mono PCM at espeak-ng's rate (22050 Hz); link it to an aligner"},
};

/* The choices' names, in the order of ENGINE_PUNCT_… and of `capitals_values`. */
static const char *const punctuation_choices[] = {"none", "some", "most", "all"};
static const char *const capitals_choices[] = {"none", "word", "pitch"};
static const int32_t capitals_values[] = {ENGINE_CAPITALS_NONE, ENGINE_CAPITALS_WORD, ENGINE_CAPITALS_PITCH};

/* The index of `name` among `choices`, or 0 (the default) when it is none of them. */
static int32_t choice_index(const char *name, const char *const *choices, int32_t count) {
    for (int32_t i = 0; name != NULL && i < count; i++) {
        if (strcmp(name, choices[i]) == 0) return i;
    }
    return 0;
}

/* Each entry ends with its `size` (common.h, "Growing the ABI") and flags: none is live. */
static const sluice_param_descriptor_t espeak_params[] = {
    {"voice", SLUICE_PARAM_STRING, 0, 0, NULL, 0, false, true, {0, 0, false, "en"}, NULL,
     "espeak-ng voice: a language or voice (en, en-us, en-gb, de), +variant optional (en+f3); `espeak-ng --voices` lists them.",
     sizeof(sluice_param_descriptor_t), 0},
    {"rate", SLUICE_PARAM_INTEGER, 80, 450, NULL, 0, false, true, {0, 175, false, NULL}, "wpm",
     "Speaking rate in words per minute.",
     sizeof(sluice_param_descriptor_t), 0},
    {"pitch", SLUICE_PARAM_INTEGER, 0, 100, NULL, 0, false, true, {0, 50, false, NULL}, NULL,
     "Base pitch: 0 lowest, 50 the voice's own, 100 highest.",
     sizeof(sluice_param_descriptor_t), 0},
    {"volume", SLUICE_PARAM_INTEGER, 0, 200, NULL, 0, false, true, {0, 100, false, NULL}, NULL,
     "Amplitude: 100 is normal, 0 silent; above 100 louder (espeak-ng limits clipping itself).",
     sizeof(sluice_param_descriptor_t), 0},
    {"buffer", SLUICE_PARAM_NUMBER, 0.02, 10, NULL, 0, false, true, {1.0, 0, false, NULL}, "s",
     "Most audio synthesised ahead of the graph; synthesis waits while this much is unread.",
     sizeof(sluice_param_descriptor_t), 0},
    {"engines", SLUICE_PARAM_INTEGER, 0, 64, NULL, 0, false, true, {0, 0, false, NULL}, NULL,
     "Most espeak-ng engines this voice may use, for many voices: 1 is the process's own only; more lets it start or share engine processes when the others are busy; 0 is one per processor but one.",
     sizeof(sluice_param_descriptor_t), 0},
    {"punctuation", SLUICE_PARAM_CHOICE, 0, 0, punctuation_choices, 4, false, true, {0, 0, false, "none"}, NULL,
     "Punctuation spoken by name (a screen reader's modes): none; some (@ / + - _); most (all but . , ? ! ' \"); all.",
     sizeof(sluice_param_descriptor_t), 0},
    {"capitals", SLUICE_PARAM_CHOICE, 0, 0, capitals_choices, 3, false, true, {0, 0, false, "none"}, NULL,
     "How a capital letter is told: none; word (\"capital\" before it); pitch (spoken higher).",
     sizeof(sluice_param_descriptor_t), 0},
};

enum { PARAM_VOICE, PARAM_RATE, PARAM_PITCH, PARAM_VOLUME, PARAM_BUFFER, PARAM_ENGINES, PARAM_PUNCTUATION, PARAM_CAPITALS, PARAM_COUNT };

static const sluice_node_descriptor_t espeak_descriptor = {
    "espeak",
    SLUICE_NODE_PROVIDER,
    "Speaks text with espeak-ng, the local speech engine: streamed S16LE mono at 22050 Hz.",
    NULL, 0,
    espeak_outputs, 1,
    espeak_params, PARAM_COUNT,
    sizeof(sluice_node_descriptor_t),
};

/* How long a wait lasts at most before the waiter looks at its stop flags again. Wake-ups
 * come sooner (a condition signal); this only bounds one lost to `cancel`, which signals
 * without taking the lock (it must not block). */
#define WAIT_BACKSTOP_NS (20 * 1000 * 1000)
/* The same bound for the synthesis thread waiting for its next utterance, which is most of a
 * served voice's life. What ends that wait comes with the lock held (an utterance completed,
 * spilled audio read, `destroy`), so it is never lost; only a `cancel` can be missed, and an
 * idle thread has nothing to cancel. Looking every 20 ms there was 50 wake-ups a second per
 * idle voice. */
#define IDLE_BACKSTOP_NS (999 * 1000 * 1000)
/* How long `read` waits for audio the synthesis is about to deliver (the current utterance's
 * text is complete) before it returns "would block": short, as provider.h asks, but long
 * enough that the host rarely polls. (Offline renders no longer need it: the renderer stands
 * its clock still while a provider has nothing yet.) */
#define READ_WAIT_NS (5 * 1000 * 1000)

/* The rate of espeak-ng's samples: engines_initialise's answer, set before any instance. */
static int engine_rate = -1;

/* MARK: Instance */

/* One utterance, from begin_utterance until `read` has reported its end. */
typedef struct utterance {
    struct utterance *next;
    char *text;        /* NUL-terminated UTF-8 (NULL while empty); freed once synthesised */
    size_t length;
    size_t capacity;
    bool complete;     /* end_utterance came: the synthesis thread may take it */
    bool synthesised;  /* its synthesis is over: `end` is final */
    bool failed;       /* …and failed; the instance's `failure` says why */
    uint64_t end;      /* `produced` when its synthesis was over: where its audio ends */
    /* Where each word's audio begins (espeak-ng's word events), in order; `read` hands them
     * out from `marks_taken` on. Text positions are converted from espeak-ng's characters to
     * UTF-8 bytes with a cursor (`scan_chars` characters are `scan_bytes` bytes). */
    sluice_word_mark_t *marks;
    size_t mark_count, mark_capacity, marks_taken;
    size_t scan_chars, scan_bytes;
} utterance_t;

typedef struct espeak_provider {
    /* Settings, fixed at create: the voice and prosody as an engine request. */
    engine_request_t settings;
    size_t ring_capacity; /* bytes, a whole number of frames */

    /* Guards everything below up to the atomics. */
    pthread_mutex_t lock;
    /* Signalled when the synthesis thread may go on: text completed, ring space freed, stop. */
    pthread_cond_t changed;
    /* Signalled when `read` may have more to return: audio written, an utterance finished. */
    pthread_cond_t readable;

    /* The queue, oldest first. `oldest` is the utterance `read` is in; `pending` the next one
     * to synthesise (NULL: none queued); `open` the one the control thread is still filling. */
    utterance_t *oldest, *newest, *pending, *open;
    bool text_ended;
    /* `read` returned the end of an utterance and no data of the next one yet: word marks
     * wait, as they belong to the utterance the latest data came from (provider.h). */
    bool between_utterances;

    /* The ring: `ring_count` unread bytes from `ring_start`. `produced` and `consumed` count
     * bytes written and read since create; an utterance ends at a `produced` value. */
    uint8_t *ring;
    size_t ring_start, ring_count;
    uint64_t produced, consumed;
    /* Bytes newer than the ring's, spilled while other instances waited for the engine: the
     * ring is refilled from here first. NULL until needed. */
    uint8_t *overflow;
    size_t overflow_start, overflow_count, overflow_capacity;

    /* The first synthesis failure, for `read`. */
    sluice_error_t failure;

    pthread_t thread;
    bool thread_started;
    int engine_limit; /* engines_open's answer (0: not counted in, so no engines_close) */

    /* [any-thread] */
    atomic_bool cancelled; /* cancel: reads return END, synthesis aborts */
    atomic_bool stopping;  /* destroy: the synthesis thread ends */
    atomic_int_fast64_t peak_buffered;
    atomic_int_fast64_t peak_overflow;
    atomic_int_fast64_t synthesised_bytes;
    atomic_int_fast64_t utterances_synthesised;
    atomic_int_fast64_t helper_utterances;
} espeak_provider_t;

static void fail(sluice_error_t *error, const char *code, const char *message) {
    if (error == NULL) return;
    snprintf(error->code, sizeof error->code, "%s", code);
    snprintf(error->message, sizeof error->message, "%s", message);
}

static bool should_stop(espeak_provider_t *self) {
    return atomic_load_explicit(&self->cancelled, memory_order_acquire)
        || atomic_load_explicit(&self->stopping, memory_order_acquire);
}

/* Waits on `condition` (a CLOCK_MONOTONIC one, with `mutex` held) until signalled or
 * `nanoseconds` (under a second) pass. */
static void wait_for(pthread_cond_t *condition, pthread_mutex_t *mutex, long nanoseconds) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_nsec += nanoseconds;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(condition, mutex, &deadline);
}

/* Waits until signalled or the backstop passes. */
static void wait_briefly(pthread_cond_t *condition, pthread_mutex_t *mutex) {
    wait_for(condition, mutex, WAIT_BACKSTOP_NS);
}

static void init_monotonic_condition(pthread_cond_t *condition) {
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(condition, &attributes);
    pthread_condattr_destroy(&attributes);
}

/* [lock held] Appends `size` bytes to the ring, which has room for them. */
static void ring_write(espeak_provider_t *self, const uint8_t *bytes, size_t size) {
    const size_t at = (self->ring_start + self->ring_count) % self->ring_capacity;
    const size_t first = size < self->ring_capacity - at ? size : self->ring_capacity - at;
    memcpy(self->ring + at, bytes, first);
    memcpy(self->ring, bytes + first, size - first);
    self->ring_count += size;
}

/* [synthesis thread, lock held] Appends `size` bytes to the overflow, growing it; false when
 * memory runs out. */
static bool spill(espeak_provider_t *self, const uint8_t *bytes, size_t size) {
    if (self->overflow_start > 0 && self->overflow_start + self->overflow_count + size > self->overflow_capacity) {
        memmove(self->overflow, self->overflow + self->overflow_start, self->overflow_count);
        self->overflow_start = 0;
    }
    if (self->overflow_count + size > self->overflow_capacity) {
        size_t capacity = self->overflow_capacity < 65536 ? 65536 : self->overflow_capacity;
        while (capacity < self->overflow_count + size) capacity *= 2;
        uint8_t *grown = (uint8_t *)realloc(self->overflow, capacity);
        if (grown == NULL) return false;
        self->overflow = grown;
        self->overflow_capacity = capacity;
    }
    memcpy(self->overflow + self->overflow_start + self->overflow_count, bytes, size);
    self->overflow_count += size;
    if ((int_fast64_t)self->overflow_count > atomic_load_explicit(&self->peak_overflow, memory_order_relaxed)) {
        atomic_store_explicit(&self->peak_overflow, (int_fast64_t)self->overflow_count, memory_order_relaxed);
    }
    return true;
}

/* [source-thread, lock held] Moves what fits from the overflow into the ring, oldest first. */
static void refill_from_overflow(espeak_provider_t *self) {
    const size_t room = self->ring_capacity - self->ring_count;
    const size_t size = self->overflow_count < room ? self->overflow_count : room;
    if (size == 0) return;
    ring_write(self, self->overflow + self->overflow_start, size);
    self->overflow_start += size;
    self->overflow_count -= size;
    if (self->overflow_count == 0) self->overflow_start = 0;
}

/* The UTF-8 byte offset of 0-based character `chars` of `utterance`'s text, scanning on from
 * its cursor (word events come in text order; an earlier position restarts the scan). */
static size_t byte_offset_of_character(utterance_t *utterance, size_t chars) {
    if (chars < utterance->scan_chars) utterance->scan_chars = utterance->scan_bytes = 0;
    while (utterance->scan_chars < chars && utterance->scan_bytes < utterance->length) {
        utterance->scan_bytes++;
        /* Continuation bytes (10xxxxxx) belong to the character before them. */
        while (utterance->scan_bytes < utterance->length &&
               ((unsigned char)utterance->text[utterance->scan_bytes] & 0xC0) == 0x80) {
            utterance->scan_bytes++;
        }
        utterance->scan_chars++;
    }
    return utterance->scan_bytes;
}

/* [synthesis thread, lock held] Appends a mark for one of espeak-ng's word events (the text
 * position is a 1-based character, `sample` counts from the start of this synthesis). False
 * when memory runs out. */
static bool record_word(utterance_t *utterance, int text_position, int length, int sample) {
    /* espeak-ng also sends an empty word (length 0) at a text's end: no word, no mark. */
    if (text_position < 1 || length < 1 || utterance->text == NULL) return true;
    if (utterance->mark_count == utterance->mark_capacity) {
        const size_t capacity = utterance->mark_capacity == 0 ? 16 : utterance->mark_capacity * 2;
        sluice_word_mark_t *grown = (sluice_word_mark_t *)realloc(utterance->marks, capacity * sizeof *grown);
        if (grown == NULL) return false;
        utterance->marks = grown;
        utterance->mark_capacity = capacity;
    }
    const size_t start = byte_offset_of_character(utterance, (size_t)text_position - 1);
    const size_t end = byte_offset_of_character(utterance, (size_t)text_position - 1 + (size_t)length);
    sluice_word_mark_t *mark = &utterance->marks[utterance->mark_count++];
    memset(mark, 0, sizeof *mark);
    mark->text_start = (uint32_t)start;
    mark->text_length = (uint32_t)(end - start);
    mark->audio_offset = (uint64_t)(sample < 0 ? 0 : sample) * sizeof(short);
    return true;
}

/* [synthesis thread, the engine's sink] Records a word before its chunk's samples are
 * readable, so a mark is always takeable by the read that returns its first byte. False
 * (abort the utterance rather than lose its timing) when memory runs out or on stop. */
static bool deliver_word(void *context, int text_position, int length, int sample) {
    espeak_provider_t *self = (espeak_provider_t *)context;
    pthread_mutex_lock(&self->lock);
    const bool recorded = self->pending == NULL || record_word(self->pending, text_position, length, sample);
    pthread_mutex_unlock(&self->lock);
    return recorded && !should_stop(self);
}

/* [synthesis thread, the engine's sink] Copies a chunk into the ring, waiting for room;
 * false (abort the synthesis) when the instance is cancelled or destroyed. */
static bool deliver_samples(void *context, const short *samples, size_t count) {
    espeak_provider_t *self = (espeak_provider_t *)context;
    pthread_mutex_lock(&self->lock);
    const uint8_t *bytes = (const uint8_t *)samples;
    size_t left = count * sizeof(short);
    while (left > 0) {
        if (should_stop(self)) {
            pthread_mutex_unlock(&self->lock);
            return false;
        }
        const size_t room = self->ring_capacity - self->ring_count;
        if (self->overflow_count > 0 || (room == 0 && engines_contended())) {
            /* Others wait for an engine (or audio already waits in the overflow, which must
             * stay in order): spill instead of holding the engine while the ring drains. */
            if (!spill(self, bytes, left)) {
                pthread_mutex_unlock(&self->lock);
                return false; /* out of memory: abort this utterance rather than lose its order */
            }
            self->produced += left;
            atomic_fetch_add_explicit(&self->synthesised_bytes, (int_fast64_t)left, memory_order_relaxed);
            pthread_cond_signal(&self->readable);
            break;
        }
        if (room == 0) {
            /* Backpressure: `read` signals `changed` when it takes bytes. */
            wait_briefly(&self->changed, &self->lock);
            continue;
        }
        const size_t size = left < room ? left : room;
        ring_write(self, bytes, size);
        self->produced += size;
        bytes += size;
        left -= size;
        pthread_cond_signal(&self->readable);
        atomic_fetch_add_explicit(&self->synthesised_bytes, (int_fast64_t)size, memory_order_relaxed);
        if ((int_fast64_t)self->ring_count > atomic_load_explicit(&self->peak_buffered, memory_order_relaxed)) {
            atomic_store_explicit(&self->peak_buffered, (int_fast64_t)self->ring_count, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&self->lock);
    return true;
}

static bool should_stop_owner(void *owner) {
    return should_stop((espeak_provider_t *)owner);
}

/* [synthesis thread] Synthesises one utterance's text into the ring, on whichever engine
 * comes first. Returns false and fills `error` when it fails; an abort (cancel, destroy) is
 * not a failure. */
static bool synthesise(espeak_provider_t *self, const char *text, sluice_error_t *error) {
    espeak_engine_t *engine = engines_acquire(self, self->engine_limit, should_stop_owner);
    if (engine == NULL) return true; /* told to stop while waiting */
    const engine_sink_t sink = {self, deliver_samples, deliver_word};
    const bool succeeded = engine_speak(engine, &self->settings, text, &sink, error);
    if (engine_is_helper(engine)) atomic_fetch_add_explicit(&self->helper_utterances, 1, memory_order_relaxed);
    engines_release(engine);
    return succeeded || should_stop(self);
}

/* The synthesis thread: each complete utterance in order, until stopped or failed. */
static void *synthesis_thread(void *argument) {
    espeak_provider_t *self = (espeak_provider_t *)argument;
    pthread_mutex_lock(&self->lock);
    for (;;) {
        /* The next utterance takes an engine only once what the last one spilled has been read
         * (`read` signals `changed`): otherwise a voice that finds the engine free again runs
         * ahead into the overflow utterance after utterance, and under contention each voice
         * held most of its text (1.2 MB each at 128 voices). */
        while (!should_stop(self) &&
               (self->pending == NULL || !self->pending->complete || self->overflow_count > 0)) {
            wait_for(&self->changed, &self->lock, IDLE_BACKSTOP_NS);
        }
        if (should_stop(self)) break;
        utterance_t *utterance = self->pending;
        pthread_mutex_unlock(&self->lock);

        /* SAFETY: a complete utterance's text no longer changes, and `read` frees an
         * utterance only once it is synthesised, which only this thread marks (below). */
        sluice_error_t error;
        memset(&error, 0, sizeof error);
        const bool succeeded = utterance->length == 0 || synthesise(self, utterance->text, &error);

        pthread_mutex_lock(&self->lock);
        if (should_stop(self)) break; /* aborted mid-utterance: its audio is incomplete */
        free(utterance->text);
        utterance->text = NULL;
        utterance->end = self->produced;
        utterance->synthesised = true;
        self->pending = utterance->next;
        pthread_cond_signal(&self->readable);
        if (!succeeded) {
            utterance->failed = true;
            self->failure = error;
            break;
        }
        atomic_fetch_add_explicit(&self->utterances_synthesised, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&self->lock);
    return NULL;
}

/* MARK: Vtable */

static bool espeak_get_format(void *instance, sluice_pcm_format_t *format) {
    (void)instance;
    format->sample_format = SLUICE_SAMPLE_S16LE;
    format->sample_rate = (uint32_t)engine_rate;
    format->channels = 1;
    return engine_rate > 0;
}

static bool espeak_begin_utterance(void *instance, sluice_error_t *error) {
    espeak_provider_t *self = (espeak_provider_t *)instance;
    utterance_t *utterance = (utterance_t *)calloc(1, sizeof *utterance);
    if (utterance == NULL) {
        fail(error, "out-of-memory", "cannot allocate an utterance");
        return false;
    }
    pthread_mutex_lock(&self->lock);
    const char *problem = self->open != NULL ? "an utterance began before the previous one ended"
                        : self->text_ended ? "an utterance began after the end of the text"
                        : NULL;
    if (problem == NULL) {
        if (self->newest != NULL) self->newest->next = utterance;
        else self->oldest = utterance;
        self->newest = utterance;
        if (self->pending == NULL) self->pending = utterance;
        self->open = utterance;
    }
    pthread_mutex_unlock(&self->lock);
    if (problem != NULL) {
        free(utterance);
        fail(error, "text-order", problem);
        return false;
    }
    return true;
}

static bool espeak_push_text(void *instance, const char *text, size_t length, sluice_error_t *error) {
    espeak_provider_t *self = (espeak_provider_t *)instance;
    bool succeeded = true;
    pthread_mutex_lock(&self->lock);
    utterance_t *utterance = self->open;
    if (utterance == NULL) {
        fail(error, "text-order", "text came outside an utterance (no begin_utterance)");
        succeeded = false;
    } else if (length > 0) {
        /* Append, keeping a NUL after the text. The synthesis thread reads the text only
         * once the utterance is complete, so growing it here (under the lock) is safe. */
        if (utterance->length + length + 1 > utterance->capacity) {
            size_t capacity = utterance->capacity < 64 ? 64 : utterance->capacity;
            while (capacity < utterance->length + length + 1) capacity *= 2;
            char *grown = (char *)realloc(utterance->text, capacity);
            if (grown == NULL) {
                fail(error, "out-of-memory", "cannot grow an utterance's text");
                succeeded = false;
            } else {
                utterance->text = grown;
                utterance->capacity = capacity;
            }
        }
        if (succeeded) {
            memcpy(utterance->text + utterance->length, text, length);
            utterance->length += length;
            utterance->text[utterance->length] = '\0';
        }
    }
    pthread_mutex_unlock(&self->lock);
    return succeeded;
}

/* [control-thread, lock held] The open utterance is complete: hand it to the synthesis thread. */
static void complete_open_utterance(espeak_provider_t *self) {
    self->open->complete = true;
    self->open = NULL;
    pthread_cond_signal(&self->changed);
}

static bool espeak_end_utterance(void *instance, sluice_error_t *error) {
    espeak_provider_t *self = (espeak_provider_t *)instance;
    pthread_mutex_lock(&self->lock);
    const bool open = self->open != NULL;
    if (open) complete_open_utterance(self);
    pthread_mutex_unlock(&self->lock);
    if (!open) fail(error, "text-order", "an utterance ended that had not begun");
    return open;
}

static void espeak_end_text(void *instance) {
    espeak_provider_t *self = (espeak_provider_t *)instance;
    pthread_mutex_lock(&self->lock);
    if (self->open != NULL) complete_open_utterance(self); /* the text ends it */
    self->text_ended = true;
    pthread_mutex_unlock(&self->lock);
}

/* [source-thread, lock held] What `read` returns now, without waiting. */
static sluice_read_status_t take(espeak_provider_t *self, void *buffer, size_t capacity, size_t *written,
                                 sluice_error_t *error) {
    if (atomic_load_explicit(&self->cancelled, memory_order_acquire)) return SLUICE_READ_END;
    refill_from_overflow(self);
    utterance_t *utterance = self->oldest;
    if (utterance == NULL) return self->text_ended ? SLUICE_READ_END : SLUICE_READ_WOULD_BLOCK;
    /* Bytes in the ring beyond this utterance's end belong to the next one. */
    size_t available = self->ring_count;
    if (utterance->synthesised && utterance->end - self->consumed < available) {
        available = (size_t)(utterance->end - self->consumed);
    }
    if (available > 0 && capacity > 0) {
        const size_t size = available < capacity ? available : capacity;
        const size_t first = size < self->ring_capacity - self->ring_start ? size : self->ring_capacity - self->ring_start;
        memcpy(buffer, self->ring + self->ring_start, first);
        memcpy((uint8_t *)buffer + first, self->ring, size - first);
        self->ring_start = (self->ring_start + size) % self->ring_capacity;
        self->ring_count -= size;
        self->consumed += size;
        self->between_utterances = false;
        *written = size;
        pthread_cond_signal(&self->changed); /* room for a waiting synthesis */
        return SLUICE_READ_DATA;
    }
    if (!utterance->synthesised) return SLUICE_READ_WOULD_BLOCK;
    if (utterance->failed) {
        *error = self->failure;
        return SLUICE_READ_ERROR; /* and again at every later read: it stays at the head */
    }
    self->oldest = utterance->next;
    if (self->newest == utterance) self->newest = NULL;
    free(utterance->marks);
    free(utterance);
    self->between_utterances = true;
    return SLUICE_READ_UTTERANCE_END;
}

static sluice_read_status_t espeak_read(void *instance, void *buffer, size_t capacity, size_t *written,
                                        sluice_error_t *error) {
    espeak_provider_t *self = (espeak_provider_t *)instance;
    *written = 0;
    pthread_mutex_lock(&self->lock);
    sluice_read_status_t status = take(self, buffer, capacity, written, error);
    if (status == SLUICE_READ_WOULD_BLOCK && self->oldest != NULL && self->oldest->complete && capacity > 0) {
        /* The utterance's text is complete, so its audio is on the way (or the engine is busy
         * with another instance): wait for it briefly, then answer. Waiting for text would
         * only delay the host handing text over, so that returns at once. */
        wait_for(&self->readable, &self->lock, READ_WAIT_NS);
        status = take(self, buffer, capacity, written, error);
    }
    pthread_mutex_unlock(&self->lock);
    return status;
}

static void espeak_cancel(void *instance) {
    espeak_provider_t *self = (espeak_provider_t *)instance;
    atomic_store_explicit(&self->cancelled, true, memory_order_release);
    /* Wake-ups without the locks (cancel must not block): a waiter that misses one sees the
     * flag within WAIT_BACKSTOP_NS. POSIX allows signalling without holding the mutex. */
    pthread_cond_signal(&self->changed);
    pthread_cond_signal(&self->readable);
    /* A synthesis thread waiting for an engine: woken now if the engines' lock is free at
     * once (its holders never keep it long), else it sees the flag at its backstop. */
    engines_wake(self, false);
}

static void espeak_destroy(void *instance) {
    espeak_provider_t *self = (espeak_provider_t *)instance;
    if (self->thread_started) {
        pthread_mutex_lock(&self->lock);
        atomic_store_explicit(&self->stopping, true, memory_order_release);
        pthread_cond_signal(&self->changed);
        pthread_mutex_unlock(&self->lock);
        engines_wake(self, true);
        /* Returns promptly: a synthesis waiting for ring space aborts (its sink says stop),
         * one waiting for the engine gives up, an idle thread leaves its wait. */
        pthread_join(self->thread, NULL);
    }
    for (utterance_t *utterance = self->oldest; utterance != NULL;) {
        utterance_t *next = utterance->next;
        free(utterance->text);
        free(utterance->marks);
        free(utterance);
        utterance = next;
    }
    if (self->engine_limit > 0) engines_close();
    free(self->ring);
    free(self->overflow);
    pthread_cond_destroy(&self->readable);
    pthread_cond_destroy(&self->changed);
    pthread_mutex_destroy(&self->lock);
    free(self);
}

static uint32_t espeak_get_counters(void *instance, sluice_counter_t *counters, uint32_t capacity) {
    espeak_provider_t *self = (espeak_provider_t *)instance;
    const sluice_counter_t all[] = {
        {"peak-buffered-bytes", (int64_t)atomic_load_explicit(&self->peak_buffered, memory_order_relaxed)},
        {"peak-overflow-bytes", (int64_t)atomic_load_explicit(&self->peak_overflow, memory_order_relaxed)},
        {"synthesised-bytes", (int64_t)atomic_load_explicit(&self->synthesised_bytes, memory_order_relaxed)},
        {"utterances-synthesised", (int64_t)atomic_load_explicit(&self->utterances_synthesised, memory_order_relaxed)},
        {"helper-utterances", (int64_t)atomic_load_explicit(&self->helper_utterances, memory_order_relaxed)},
    };
    const uint32_t count = (uint32_t)(sizeof all / sizeof all[0]);
    for (uint32_t index = 0; index < count && index < capacity; index++) counters[index] = all[index];
    return count;
}

/* Whole utterances only (espeak-ng synthesises a whole text per call), with word timing. */
static uint32_t espeak_get_capabilities(void *instance) {
    (void)instance;
    return SLUICE_PROVIDER_WORD_TIMING;
}

/* [source-thread] The word marks of the utterance `read` is in, not taken yet. */
static uint32_t espeak_take_word_marks(void *instance, sluice_word_mark_t *marks, uint32_t capacity) {
    espeak_provider_t *self = (espeak_provider_t *)instance;
    uint32_t taken = 0;
    pthread_mutex_lock(&self->lock);
    utterance_t *utterance = self->between_utterances ? NULL : self->oldest;
    while (utterance != NULL && taken < capacity && utterance->marks_taken < utterance->mark_count) {
        marks[taken++] = utterance->marks[utterance->marks_taken++];
    }
    pthread_mutex_unlock(&self->lock);
    return taken;
}

static const sluice_provider_vtable_t espeak_vtable = {
    espeak_get_format, espeak_begin_utterance, espeak_push_text,        espeak_end_utterance,
    espeak_end_text,   espeak_read,            espeak_cancel,           espeak_destroy,
    espeak_get_counters, espeak_get_capabilities, sizeof(sluice_provider_vtable_t), espeak_take_word_marks,
};

/* MARK: Factory */

static uint32_t factory_count(const sluice_node_factory_t *factory) {
    (void)factory;
    return 1;
}

static const sluice_node_descriptor_t *factory_get_descriptor(const sluice_node_factory_t *factory, uint32_t index) {
    (void)factory;
    return index == 0 ? &espeak_descriptor : NULL;
}

/* [control-thread] Whether espeak-ng knows the voice: selects it on an engine. */
static bool voice_exists(espeak_provider_t *self, sluice_error_t *error) {
    espeak_engine_t *engine = engines_acquire(self, self->engine_limit, should_stop_owner);
    if (engine == NULL) return false;
    const bool exists = engine_select(engine, self->settings.voice, error);
    engines_release(engine);
    return exists;
}

/* Whether `voice` is a voice name and not a path: espeak-ng reads a voice file by that name
 * under its data folder, so "../../../../etc/passwd" would have it read any file. Letters,
 * digits, '-', '_', '+' (a variant), and '/' between names (gmw/en-US); no "..", no leading
 * '/', nothing empty between slashes. */
static bool voice_name_is_plain(const char *voice) {
    if (voice[0] == '\0' || voice[0] == '/' || strstr(voice, "..") != NULL || strstr(voice, "//") != NULL) return false;
    for (const char *c = voice; *c != '\0'; c++) {
        const bool allowed = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
                             *c == '_' || *c == '+' || *c == '/';
        if (!allowed) return false;
    }
    return voice[strlen(voice) - 1] != '/';
}

static bool factory_create_provider(const sluice_node_factory_t *factory, const char *type_name,
                                    const sluice_param_value_t *params, uint32_t param_count,
                                    sluice_provider_t *provider, sluice_error_t *error) {
    (void)factory;
    char message[sizeof error->message];
    if (strcmp(type_name, espeak_descriptor.type_name) != 0) {
        snprintf(message, sizeof message, "this plugin has no provider named '%s'", type_name);
        fail(error, "unknown-type", message);
        return false;
    }
    engine_rate = engines_initialise();
    if (engine_rate <= 0) {
        fail(error, "espeak-unavailable",
             "espeak-ng could not initialise; install its voice data (apt-get install espeak-ng-data)");
        return false;
    }

    /* Defaults, then the values given (the host passes every parameter: all have defaults). */
    const char *voice = "en";
    int rate = 175, pitch = 50, volume = 100, engines = 0;
    int32_t punctuation = ENGINE_PUNCT_NONE, capitals = ENGINE_CAPITALS_NONE;
    double buffer = 1.0;
    for (uint32_t i = 0; i < param_count; i++) {
        const char *name = params[i].name;
        if (strcmp(name, "voice") == 0 && params[i].value.string != NULL) voice = params[i].value.string;
        else if (strcmp(name, "rate") == 0) rate = (int)params[i].value.integer;
        else if (strcmp(name, "pitch") == 0) pitch = (int)params[i].value.integer;
        else if (strcmp(name, "volume") == 0) volume = (int)params[i].value.integer;
        else if (strcmp(name, "buffer") == 0) buffer = params[i].value.number;
        else if (strcmp(name, "engines") == 0) engines = (int)params[i].value.integer;
        else if (strcmp(name, "punctuation") == 0) punctuation = choice_index(params[i].value.string, punctuation_choices, 4);
        else if (strcmp(name, "capitals") == 0) capitals = capitals_values[choice_index(params[i].value.string, capitals_choices, 3)];
    }

    espeak_provider_t *self = (espeak_provider_t *)calloc(1, sizeof *self);
    if (self == NULL) {
        fail(error, "out-of-memory", "cannot allocate an espeak provider");
        return false;
    }
    if (strlen(voice) >= sizeof self->settings.voice) {
        free(self);
        fail(error, "unknown-voice", "the voice name is too long; `espeak-ng --voices` lists the voices");
        return false;
    }
    if (!voice_name_is_plain(voice)) {
        free(self);
        fail(error, "unknown-voice",
             "a voice is a name such as en, en-us or gmw/en-US, with an optional +variant (letters, digits, '-', '_', '+', "
             "and '/' between names); `espeak-ng --voices` lists them");
        return false;
    }
    snprintf(self->settings.voice, sizeof self->settings.voice, "%s", voice);
    self->settings.rate = rate;
    self->settings.pitch = pitch;
    self->settings.volume = volume;
    self->settings.punctuation = punctuation;
    self->settings.capitals = capitals;
    size_t frames = (size_t)(buffer * engine_rate + 0.5);
    self->ring_capacity = (frames < 1 ? 1 : frames) * sizeof(short);
    atomic_init(&self->cancelled, false);
    atomic_init(&self->stopping, false);
    atomic_init(&self->peak_buffered, 0);
    atomic_init(&self->peak_overflow, 0);
    atomic_init(&self->synthesised_bytes, 0);
    atomic_init(&self->utterances_synthesised, 0);
    atomic_init(&self->helper_utterances, 0);

    init_monotonic_condition(&self->changed);
    init_monotonic_condition(&self->readable);
    pthread_mutex_init(&self->lock, NULL);

    self->engine_limit = engines_open(engines, error);
    if (self->engine_limit == 0) {
        espeak_destroy(self);
        return false;
    }
    sluice_error_t refusal;
    memset(&refusal, 0, sizeof refusal);
    if (!voice_exists(self, &refusal)) {
        if (strcmp(refusal.code, "unknown-voice") == 0) {
            snprintf(message, sizeof message,
                     "espeak-ng has no voice '%s'; `espeak-ng --voices` lists them (e.g. en, en-us, de, en+f3)",
                     self->settings.voice);
            fail(error, "unknown-voice", message);
        } else if (error != NULL) {
            *error = refusal; /* the engine process failed: its own words */
        }
        espeak_destroy(self);
        return false;
    }
    self->ring = (uint8_t *)malloc(self->ring_capacity);
    if (self->ring == NULL) {
        fail(error, "out-of-memory", "cannot allocate the audio buffer; lower `buffer`");
        espeak_destroy(self);
        return false;
    }
    const int started = pthread_create(&self->thread, NULL, synthesis_thread, self);
    if (started != 0) {
        snprintf(message, sizeof message, "cannot start the synthesis thread (%s)", strerror(started));
        fail(error, "thread-failed", message);
        espeak_destroy(self);
        return false;
    }
    self->thread_started = true;
    pthread_setname_np(self->thread, "sluice-espeak");

    provider->instance = self;
    provider->vtable = &espeak_vtable;
    return true;
}

static bool factory_create_processor(const sluice_node_factory_t *factory, const char *type_name,
                                     const sluice_param_value_t *params, uint32_t param_count,
                                     sluice_processor_t *processor, sluice_error_t *error) {
    (void)factory, (void)params, (void)param_count, (void)processor;
    char message[256];
    snprintf(message, sizeof message, "this plugin has no processor named '%s'", type_name);
    fail(error, "unknown-type", message);
    return false;
}

static const sluice_node_factory_t factory = {
    factory_count, factory_get_descriptor, factory_create_provider, factory_create_processor,
};

/* MARK: Entry */

static bool entry_init(const char *plugin_path) {
    /* espeak-ng starts at the first create, not when the plugin is listed; the helper
     * processes, when voices wait for an engine. */
    engines_locate_helper(plugin_path);
    return true;
}

static void entry_deinit(void) {
    /* espeak-ng stays initialised: the library stays mapped, and a later load reuses it. */
}

static const void *entry_get_factory(const char *factory_id) {
    return strcmp(factory_id, SLUICE_NODE_FACTORY_ID) == 0 ? &factory : NULL;
}

static const sluice_plugin_entry_t entry = {
    SLUICE_ABI_VERSION, entry_init, entry_deinit, entry_get_factory,
};

SLUICE_EXPORT const sluice_plugin_entry_t *sluice_plugin_entry(void) {
    return &entry;
}
