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
 */
#ifndef SLUICE_PROCESSOR_H
#define SLUICE_PROCESSOR_H

#include "common.h"

SLUICE_EXTERN_C_BEGIN

/* What `process` returned. */
typedef int32_t sluice_process_status_t;
enum {
    /* The outputs hold `frames` frames. */
    SLUICE_PROCESS_CONTINUE = 0,
    /* Processing failed; the host writes silence for this call and counts the failure. */
    SLUICE_PROCESS_ERROR = -1
};

/* One call's audio. Owned by the host, valid only during `process`. */
typedef struct sluice_process {
    /* Index of this call's first frame since `activate` or `reset`. */
    uint64_t position;
    /* Frames each input offers and each output takes: 1 … `max_frames` from `activate`. */
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
} sluice_process_t;

typedef struct sluice_processor_vtable {
    /* [control-thread & !active] Prepares for a stream at `sample_rate` with at most
     * `max_frames` frames per call and `channels` channels on every port: allocate here.
     * Returns false (and fills `error`) when it cannot (a channel count it does not support);
     * the host refuses the graph with that message. */
    bool (*activate)(void *instance, uint32_t sample_rate, uint32_t max_frames, uint32_t channels,
                     sluice_error_t *error);

    /* [audio-thread & active] Processes one block (see sluice_process_t). Real-time rules
     * apply: no allocation, locks, waits, I/O or logging. */
    sluice_process_status_t (*process)(void *instance, const sluice_process_t *process);

    /* [control-thread & active] Forgets the stream (envelopes, delay lines) as if just
     * activated. Must not allocate. */
    void (*reset)(void *instance);

    /* [control-thread & active] Frees what `activate` allocated. */
    void (*deactivate)(void *instance);

    /* [control-thread & !active] Frees the instance. No call comes after it. */
    void (*destroy)(void *instance);
} sluice_processor_vtable_t;

/* An instance: `create_processor` (factory.h) fills one in. `instance` and `vtable` are owned
 * by the plugin; `vtable` stays valid until `deinit`, `instance` until `destroy`. */
typedef struct sluice_processor {
    void *instance;
    const sluice_processor_vtable_t *vtable;
} sluice_processor_t;

SLUICE_EXTERN_C_END

#endif /* SLUICE_PROCESSOR_H */
