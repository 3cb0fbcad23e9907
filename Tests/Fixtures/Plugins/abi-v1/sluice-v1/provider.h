/*
 * Providers: nodes that turn text into PCM bytes (a speech engine, an HTTP service, a test
 * signal). The host drives one as a text-driven graph source.
 *
 * Text arrives per utterance: `begin_utterance`, then `push_text` once (a whole sentence) or
 * many times (tokens from a language model, as they come), then `end_utterance`. A provider
 * that needs the whole text buffers it until `end_utterance`; one that streams may start
 * synthesising at once. `end_text` says no further utterance will come.
 *
 * Audio leaves through `read`, which fills the caller's buffer with bytes in the format
 * `get_format` declared and says what it returned: data, the end of the current utterance,
 * the end of the stream, "would block" (nothing ready yet), or an error with a code and a
 * message. Utterances come out in the order they were begun.
 *
 * Concurrency: the text functions run on the [control-thread] while `read` runs on the
 * [source-thread]; the provider synchronises the two (a mutex or a queue of its own). `cancel`
 * may come from any thread at any time.
 */
#ifndef SLUICE_PROVIDER_H
#define SLUICE_PROVIDER_H

#include "common.h"

SLUICE_EXTERN_C_BEGIN

/* What `read` returned. */
typedef int32_t sluice_read_status_t;
enum {
    /* `*written` > 0 bytes were written to the buffer. */
    SLUICE_READ_DATA = 0,
    /* The current utterance's audio is complete (nothing was written); the next data
     * belongs to the next utterance. */
    SLUICE_READ_UTTERANCE_END = 1,
    /* The stream is complete: `end_text` was called and everything was read, or the
     * provider was cancelled. Nothing was written; later calls return END again. */
    SLUICE_READ_END = 2,
    /* Nothing is ready yet (waiting for text or for the network); call again later. */
    SLUICE_READ_WOULD_BLOCK = 3,
    /* The provider failed; `error` says why. The stream ends after what was already read. */
    SLUICE_READ_ERROR = -1
};

typedef struct sluice_provider_vtable {
    /* [control-thread] Writes the format `read` delivers into `*format`. Called after
     * create and before any other call; must not change afterwards. Returns false when the
     * provider cannot say (the host then refuses the node). */
    bool (*get_format)(void *instance, sluice_pcm_format_t *format);

    /* [control-thread] Starts a new utterance. Returns false (and fills `error`) on failure;
     * the stream then fails at the next `read`. */
    bool (*begin_utterance)(void *instance, sluice_error_t *error);

    /* [control-thread] Appends `length` bytes of UTF-8 text (not NUL-terminated, valid only
     * during the call) to the current utterance. Concurrent with `read`. */
    bool (*push_text)(void *instance, const char *text, size_t length, sluice_error_t *error);

    /* [control-thread] The current utterance's text is complete. Concurrent with `read`. */
    bool (*end_utterance)(void *instance, sluice_error_t *error);

    /* [control-thread] No further utterance will begin: once everything is read, `read`
     * returns SLUICE_READ_END. Concurrent with `read`. */
    void (*end_text)(void *instance);

    /* [source-thread] Writes at most `capacity` bytes (the host's buffer, valid during the
     * call) and sets `*written` to how many; returns SLUICE_READ_*. Data may end anywhere,
     * even inside a frame. On SLUICE_READ_ERROR fills `error`. Should not block for long:
     * return SLUICE_READ_WOULD_BLOCK, and the host calls again within a few milliseconds and
     * right after it hands over new text. */
    sluice_read_status_t (*read)(void *instance, void *buffer, size_t capacity, size_t *written,
                                 sluice_error_t *error);

    /* [any-thread] Asks the provider to stop: a blocked or later `read` returns
     * SLUICE_READ_END soon. Idempotent. */
    void (*cancel)(void *instance);

    /* [control-thread] Frees the instance. No call is running or comes after it. */
    void (*destroy)(void *instance);

    /* [any-thread] Optional (may be NULL): the provider's counters, such as
     * "peak-buffered-bytes". Writes at most `capacity` of them to `counters` (the host's
     * array) and returns how many the provider has; the host calls again with a larger array
     * when that is more than `capacity`. Must not block for long. */
    uint32_t (*get_counters)(void *instance, sluice_counter_t *counters, uint32_t capacity);

    /* [any-thread] Optional (may be NULL, meaning none): what the provider can do, as
     * SLUICE_PROVIDER_* flags ORed together. Must not change over the instance's life. */
    uint32_t (*get_capabilities)(void *instance);
} sluice_provider_vtable_t;

/* Capabilities `get_capabilities` reports. */
enum {
    /* Speech of an utterance may begin before `end_utterance`: a host streaming a language
     * model's reply pushes each token as it arrives instead of waiting for whole sentences. */
    SLUICE_PROVIDER_INCREMENTAL_TEXT = 1u << 0
};

/* An instance: `create_provider` (factory.h) fills one in. `instance` and `vtable` are owned
 * by the plugin; `vtable` stays valid until `deinit`, `instance` until `destroy`. */
typedef struct sluice_provider {
    void *instance;
    const sluice_provider_vtable_t *vtable;
} sluice_provider_t;

SLUICE_EXTERN_C_END

#endif /* SLUICE_PROVIDER_H */
