/*
 * Processors: nodes that move Float32 frames from inputs to outputs — a ducker, a gain, an
 * effect. Every port carries interleaved Float32 frames, all at one sample rate and channel
 * count, fixed at `activate`.
 *
 * Lifecycle: create → activate (the only place that may allocate) → process, many times,
 * with `reset` between streams → deactivate → (activate again, or) destroy.
 *
 * In each `process` call every input offers `frames` frames and every output takes exactly
 * `frames` frames: output frame n is written from input frame n, so the host keeps stream
 * positions and markers aligned. An input whose stream has ended arrives as silence.
 *
 * Since version 2 a call also carries events (events.h): the changes of live parameters and
 * the markers the inputs reached, each at the frame of the call it applies from.
 */
#ifndef SLUICE_PROCESSOR_H
#define SLUICE_PROCESSOR_H

#include "common.h"
#include "events.h"

SLUICE_EXTERN_C_BEGIN

/* What `process` returned. */
typedef int32_t sluice_process_status_t;
enum {
    /* The outputs hold `frames` frames. */
    SLUICE_PROCESS_CONTINUE = 0,
    /* Processing failed; the host writes silence for this call and counts the failure. */
    SLUICE_PROCESS_ERROR = -1
};

/* One call's audio and events. Owned by the host, valid only during `process`. */
typedef struct sluice_process {
    /* Index of this call's first frame since `activate` or `reset`. */
    uint64_t position;
    /* Frames each input offers and each output takes: 1 … `max_frames` from `activate`.
     * Version 2: 0 in a call that carries only events — when more wait than one call holds,
     * and once after every input's stream has ended, to hand over its last markers. Such a
     * call reads and writes no samples. A version-1 plugin never gets one. */
    uint32_t frames;
    /* Channels in every port, as given to `activate`. */
    uint32_t channels;
    uint32_t input_count;
    uint32_t output_count;
    /* `input_count` pointers, each to `frames × channels` interleaved samples. */
    const float *const *inputs;
    /* `output_count` pointers, each to room for `frames × channels` samples. Never aliases
     * an input. */
    float *const *outputs;

    /* Version 2 (common.h, "Growing the ABI"): sizeof(sluice_process_t) as the host built
     * it. A plugin reads a field added after version 2 only when SLUICE_HAS_FIELD(process,
     * sluice_process_t, field) says it is there. */
    uint32_t size;
    /* How many events `events` holds (0: none). */
    uint32_t event_count;
    /* `event_count` pointers to events, in order of `offset` (events at one offset in the
     * order they happened), each starting with a sluice_event_header_t. NULL when none. */
    const sluice_event_header_t *const *events;
} sluice_process_t;

typedef struct sluice_processor_vtable {
    /* [control-thread & !active] Prepares for a stream at `sample_rate` with at most
     * `max_frames` frames per call and `channels` channels on every port: allocate here.
     * Returns false (and fills `error`) when it cannot (a channel count it does not support);
     * the host refuses the graph with that message. */
    bool (*activate)(void *instance, uint32_t sample_rate, uint32_t max_frames, uint32_t channels,
                     sluice_error_t *error);

    /* [audio-thread & active] Processes one block (see sluice_process_t) and applies its
     * events, each from its offset: split the block at each event's offset, or ramp from
     * there. Real-time rules apply: no allocation, locks, waits, I/O or logging. */
    sluice_process_status_t (*process)(void *instance, const sluice_process_t *process);

    /* [control-thread & active] Forgets the stream (envelopes, delay lines) as if just
     * activated. Must not allocate. */
    void (*reset)(void *instance);

    /* [control-thread & active] Frees what `activate` allocated. */
    void (*deactivate)(void *instance);

    /* [control-thread & !active] Frees the instance. No call comes after it. */
    void (*destroy)(void *instance);

    /* Version 2: sizeof(sluice_processor_vtable_t) as the plugin was built. Functions added
     * later are appended after it, optional (NULL: not supported). */
    uint32_t size;
} sluice_processor_vtable_t;

/* An instance: `create_processor` (factory.h) fills one in. `instance` and `vtable` are owned
 * by the plugin; `vtable` stays valid until `deinit`, `instance` until `destroy`. */
typedef struct sluice_processor {
    void *instance;
    const sluice_processor_vtable_t *vtable;
} sluice_processor_t;

SLUICE_EXTERN_C_END

#endif /* SLUICE_PROCESSOR_H */
