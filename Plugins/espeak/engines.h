/*
 * The espeak plugin's engines: espeak-ng's one engine in this process and, when the
 * `engines` parameter allows more, helper processes (`sluice-espeak-engine`, beside the
 * plugin), each one more engine. A synthesis thread takes an engine for a whole utterance;
 * engines pass to waiting threads in the order they asked. engines.c says how.
 */
#ifndef SLUICE_ESPEAK_ENGINES_H
#define SLUICE_ESPEAK_ENGINES_H

#include <stdbool.h>
#include <stddef.h>

#include <sluice/sluice.h>

#include "engine/protocol.h"

typedef struct espeak_engine espeak_engine_t;

/* Where a synthesis's output goes, on the thread that holds the engine. */
typedef struct {
    void *context;
    /* A chunk of samples (count > 0). False aborts the synthesis. */
    bool (*samples)(void *context, const short *samples, size_t count);
    /* An espeak-ng word event: 1-based character position, length in characters, the word's
     * first sample from the start of the synthesis. False aborts the synthesis. */
    bool (*word)(void *context, int text_position, int length, int sample);
} engine_sink_t;

/* [entry init] Remembers the helper's path: beside the plugin at `plugin_path`. */
void engines_locate_helper(const char *plugin_path);

/* Initialises the in-process engine once; its sample rate, or -1 when espeak-ng failed. */
int engines_initialise(void);

/* [control-thread] An instance counts itself in. Returns how many engines it may use: `engines`
 * (0: one per online processor but one; at most 64), or 1 when that is 0 and the helper cannot be
 * run. 0, with `error`, when `engines` is 2 or more and the helper cannot be run. */
int engines_open(int engines, sluice_error_t *error);
/* [control-thread] An instance counts itself out; after the last, the helpers end. */
void engines_close(void);

/* Takes one of the first `limit` engines for `owner`: a free one (the in-process engine
 * first), a new helper when `limit` allows, else the next one released that it may take (in
 * the order threads asked). NULL when `should_stop(owner)` first. */
espeak_engine_t *engines_acquire(void *owner, int limit, bool (*should_stop)(void *owner));
/* Hands `engine` to the longest waiter, or frees it. */
void engines_release(espeak_engine_t *engine);
/* Wakes `owner`'s waiting thread (NULL: every waiter) so it sees its stop flag. With
 * `may_block` false it does nothing when the engines' lock is taken (for `cancel`). */
void engines_wake(void *owner, bool may_block);
/* Whether threads are waiting for an engine: the holder then spills rather than waits. */
bool engines_contended(void);
/* Whether `engine` is a helper process. */
bool engine_is_helper(const espeak_engine_t *engine);

/* [engine holder] Selects `voice`; false (with `unknown-voice`, or the helper's failure)
 * when espeak-ng refuses it. */
bool engine_select(espeak_engine_t *engine, const char *voice, sluice_error_t *error);
/* [engine holder] Speaks `text` with `settings` into `sink`. False with `error` when the
 * voice is refused, espeak-ng fails, or the helper process ends; a synthesis the sink
 * aborted returns true (the caller knows why it aborted). */
bool engine_speak(espeak_engine_t *engine, const engine_request_t *settings, const char *text,
                  const engine_sink_t *sink, sluice_error_t *error);

#endif
