/*
 * Events: what reaches a processor beside its audio in `process` (processor.h) — changes of
 * its live parameters and the stream's markers (utterance start and end, discontinuity, text
 * span, end of stream) — as CLAP's `clap_process` carries `in_events`. Since version 2.
 *
 * Each event starts with a `sluice_event_header_t`; its `kind` says which struct it is and its
 * `size` how long it is, so a plugin skips a kind it does not know and reads fields appended
 * later only when `size` covers them (SLUICE_HAS_FIELD, common.h). Events are owned by the
 * host and valid only during the `process` call that carries them.
 */
#ifndef SLUICE_EVENTS_H
#define SLUICE_EVENTS_H

#include "common.h"

SLUICE_EXTERN_C_BEGIN

/* Which event a header starts. */
typedef uint32_t sluice_event_kind_t;
enum {
    /* A sluice_param_event_t: a live parameter changes. */
    SLUICE_EVENT_PARAM = 1,
    /* A sluice_marker_event_t: a marker reached the processor on one of its inputs. */
    SLUICE_EVENT_MARKER = 2
};

/* The start of every event. */
typedef struct sluice_event_header {
    /* sizeof the whole event (this header included) as the host built it. */
    uint32_t size;
    sluice_event_kind_t kind; /* SLUICE_EVENT_* */
    /* The frame of this call from which the event applies: 0 … frames − 1 (0 in a call of 0
     * frames). Frames before it are processed as before the event, frames from it after. */
    uint32_t offset;
    /* 0; reserved for flags. */
    uint32_t reserved;
} sluice_event_header_t;

/* Whether `event` (a pointer to an event struct) was built with `field`: its header's `size`
 * covers it. Fields appended to an event since it first shipped are read only then. */
#define SLUICE_EVENT_HAS_FIELD(event, type, field) \
    ((event)->header.size >= offsetof(type, field) + sizeof(((const type *)0)->field))

/* A live parameter's new value (SLUICE_PARAM_LIVE, descriptor.h). */
typedef struct sluice_param_event {
    sluice_event_header_t header; /* kind SLUICE_EVENT_PARAM */
    /* The parameter's index in the node descriptor's `params`. Plugins built before
     * `param_name` existed read this; new code should match `param_name` instead, which
     * stays right when the descriptor's order and the code's constants drift apart. */
    uint32_t param_index;
    uint32_t reserved; /* 0 */
    /* The new value, within the parameter's range; a whole number for an INTEGER. */
    double value;
    /* Appended in 0.x (read when SLUICE_EVENT_HAS_FIELD(event, sluice_param_event_t,
     * param_name)): the parameter's name as the descriptor declares it, NUL-terminated,
     * owned by the host and valid during the call. The host always sets it, and sets
     * `param_index` to the same parameter. */
    const char *param_name;
} sluice_param_event_t;

/* What a marker announces. */
typedef uint32_t sluice_marker_kind_t;
enum {
    /* The audio of utterance `utterance` begins here. */
    SLUICE_MARKER_UTTERANCE_START = 1,
    /* The audio of utterance `utterance` ends here. */
    SLUICE_MARKER_UTTERANCE_END = 2,
    /* The signal jumps here (a gap, a provider's failure). */
    SLUICE_MARKER_DISCONTINUITY = 3,
    /* The audio from here speaks bytes `text_start` … `text_end` (UTF-8, end exclusive) of
     * the stream's text, in utterance `utterance`. */
    SLUICE_MARKER_TEXT_SPAN = 4,
    /* This input's stream has ended: from here it arrives as silence. */
    SLUICE_MARKER_END_OF_STREAM = 5,
    /* The audio of a word begins here: it speaks bytes `text_start` … `text_end` of the
     * stream's text, in utterance `utterance` (providers with SLUICE_PROVIDER_WORD_TIMING). */
    SLUICE_MARKER_WORD = 6
};

/* Flags of a marker (`sluice_marker_event_t.flags`). */
enum {
    /* The signal does not continue across this marker (an utterance cut short): fade. */
    SLUICE_MARKER_DISCONTINUOUS = 1u << 0
};

/* A marker that one input carried. The host still passes every marker downstream itself, as
 * before: the event tells the processor, it does not ask it to forward anything. */
typedef struct sluice_marker_event {
    sluice_event_header_t header; /* kind SLUICE_EVENT_MARKER */
    sluice_marker_kind_t marker;  /* SLUICE_MARKER_* */
    /* The input it arrived on: 0 … input_count − 1. */
    uint32_t input;
    uint32_t flags; /* SLUICE_MARKER_* flags */
    /* UTTERANCE_START, UTTERANCE_END, TEXT_SPAN and WORD: the utterance's id; 0 otherwise. */
    uint32_t utterance;
    /* TEXT_SPAN and WORD: the byte range; 0 otherwise. */
    int32_t text_start;
    int32_t text_end;
} sluice_marker_event_t;

SLUICE_EXTERN_C_END

#endif /* SLUICE_EVENTS_H */
