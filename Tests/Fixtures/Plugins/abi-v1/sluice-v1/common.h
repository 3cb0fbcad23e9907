/*
 * Sluice plugin ABI: what every other header builds on — the ABI version, the export macro,
 * the thread and state tags, errors and PCM formats.
 *
 * Only C types cross the boundary. Every struct here is plain data; every function is a
 * function pointer called with an explicit instance pointer. The headers compile as C11 and
 * as C++17 with -pedantic (a test checks both, with gcc, g++ and clang).
 */
#ifndef SLUICE_COMMON_H
#define SLUICE_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The ABI version. A plugin reports the version it was built with as the first field of its
 * entry (entry.h); a host loads only plugins whose version equals its own. Any change to a
 * struct layout, a function signature or the meaning of a value raises it.
 */
#define SLUICE_ABI_VERSION 1u

#if defined(__cplusplus)
#define SLUICE_EXTERN_C_BEGIN extern "C" {
#define SLUICE_EXTERN_C_END }
#else
#define SLUICE_EXTERN_C_BEGIN
#define SLUICE_EXTERN_C_END
#endif

/* Marks the one symbol a plugin exports (entry.h); build plugins with -fvisibility=hidden
 * or make everything else `static`. */
#define SLUICE_EXPORT __attribute__((visibility("default")))

/*
 * Thread and state tags
 * ---------------------
 * Every function in these headers carries one tag saying which thread may call it, and in
 * which state. They are defined here, once, and the Swift modules use the same words
 * (SluiceGraph's Node.swift).
 *
 * [control-thread]  The host thread that loads plugins, creates, activates, deactivates and
 *                   destroys instances, and hands a provider its text. Calls on one instance
 *                   are never concurrent with each other. May allocate, block and do I/O.
 * [source-thread]   A non-real-time thread the host runs one instance's work on: for a
 *                   provider, its source thread, which calls `read` (this tag was
 *                   [worker-thread] before; the words changed, not the rules). One thread at a time per
 *                   instance, but it may run concurrently with that instance's
 *                   [control-thread] calls where a function says so. May allocate; should not
 *                   block for long (return "would block" instead).
 * [audio-thread]    Real-time rules: the JACK process callback for a processor placed in the
 *                   cycle, the graph's worker thread for one before the boundary, the offline
 *                   driver's thread offline (docs/architecture.md). No allocation or free, no
 *                   locks, no waiting, no I/O, no logging, nothing whose time is unbounded. A
 *                   processor's `process` runs here.
 * [any-thread]      Any thread, concurrently with any other call on the same instance
 *                   (`cancel`). Must be safe for that: set an atomic flag, nothing more.
 *
 * State qualifiers follow after `&`:
 *   & active     between a successful `activate` and `deactivate`
 *   & !active    before `activate` or after `deactivate`
 */

/*
 * A failure, typed and told in a sentence. The caller owns the struct (usually on its stack)
 * and passes a pointer to functions that can fail; on failure the plugin writes NUL-terminated
 * text into both fields, truncating to fit, and allocates nothing. The host zeroes it first.
 */
typedef struct sluice_error {
    /* A stable, machine-readable name: "http-401", "quota-exceeded", "bad-parameter". */
    char code[64];
    /* One sentence a user can act on: "the API key was refused: set ELEVENLABS_API_KEY". */
    char message[448];
} sluice_error_t;

/* A named count a node keeps about its own work (bytes buffered at most, retries, pauses),
 * printed as "node.name" by `sluice run --stats json`. `name` follows the parameter-name
 * rules (descriptor.h) and is owned by the plugin: static, valid until `deinit`. */
typedef struct sluice_counter {
    const char *name;
    int64_t value;
} sluice_counter_t;

/* What a port carries. */
typedef uint32_t sluice_medium_t;
enum {
    /* Raw PCM bytes in a declared format (a provider's output, before the aligner). */
    SLUICE_MEDIUM_BYTES = 1,
    /* Interleaved Float32 frames at one rate and channel count. */
    SLUICE_MEDIUM_FRAMES = 2
};

/* How one sample is stored in a byte stream: little-endian, two's complement integers. */
typedef uint32_t sluice_sample_format_t;
enum {
    SLUICE_SAMPLE_S16LE = 1, /* 16-bit signed integer */
    SLUICE_SAMPLE_S24LE = 2, /* 24-bit signed integer packed in 3 bytes */
    SLUICE_SAMPLE_S32LE = 3, /* 32-bit signed integer */
    SLUICE_SAMPLE_F32LE = 4  /* IEEE-754 32-bit float, full scale ±1.0 */
};

/* A PCM byte stream's layout: interleaved channels. */
typedef struct sluice_pcm_format {
    sluice_sample_format_t sample_format; /* one of SLUICE_SAMPLE_* */
    uint32_t sample_rate;                 /* frames per second, 1000 … 384000 */
    uint32_t channels;                    /* 1 … 8 */
} sluice_pcm_format_t;

#endif /* SLUICE_COMMON_H */
