/*
 * The espeak plugin and its engine processes (`sluice-espeak-engine`) speak over one Unix
 * stream socket, the helper's stdin and stdout. espeak-ng keeps its state in process
 * globals, so a process has one engine; a helper process is one more, and many voices in one
 * host synthesise on as many cores as the `engines` parameter allows.
 *
 * Every message is a header (`engine_header_t`, native byte order: both ends are the same
 * build on the same machine) followed by `size` bytes.
 *
 *   host → helper   ENGINE_SELECT  engine_request_t                      select and check a voice
 *                   ENGINE_SPEAK   engine_request_t, then the UTF-8 text, NUL-terminated
 *                   ENGINE_ABORT   (empty)   stop the synthesis in progress at its next chunk
 *   helper → host   ENGINE_READY   engine_ready_t     once, after espeak_Initialize
 *                   ENGINE_WORD    engine_word_t      a word event, before its chunk
 *                   ENGINE_AUDIO   native `short`s    a chunk of samples (about 20 ms)
 *                   ENGINE_DONE    engine_done_t      the request is over
 *
 * A request is answered by WORD and AUDIO messages (SPEAK only), then exactly one DONE. An
 * ABORT that arrives when no synthesis runs is ignored, so the host may send one at any time
 * before the DONE. The helper ends when its socket closes (the host is gone).
 */
#ifndef SLUICE_ESPEAK_ENGINE_PROTOCOL_H
#define SLUICE_ESPEAK_ENGINE_PROTOCOL_H

#include <stdint.h>
#include <string.h>

#include <espeak-ng/speak_lib.h>

/* The helper's file name, beside the plugin's library. */
#define ENGINE_HELPER_NAME "sluice-espeak-engine"
/* espeak_Synth's sample chunks: 20 ms, so audio leaves in small steps. */
#define ENGINE_CHUNK_MS 20
#define ENGINE_VOICE_CAPACITY 128

enum {
    ENGINE_SELECT = 1,
    ENGINE_SPEAK = 2,
    ENGINE_ABORT = 3,
    ENGINE_READY = 101,
    ENGINE_WORD = 102,
    ENGINE_AUDIO = 103,
    ENGINE_DONE = 104,
};

typedef struct {
    uint32_t type;
    uint32_t size; /* bytes after the header */
} engine_header_t;

typedef struct {
    char voice[ENGINE_VOICE_CAPACITY]; /* NUL-terminated */
    int32_t rate, pitch, volume;
    int32_t punctuation; /* ENGINE_PUNCT_… */
    int32_t capitals;    /* ENGINE_CAPITALS_… */
} engine_request_t;

/* Which punctuation is spoken by name (speech-dispatcher's modes). */
enum {
    ENGINE_PUNCT_NONE = 0,
    ENGINE_PUNCT_SOME = 1, /* ENGINE_PUNCT_SOME_LIST */
    ENGINE_PUNCT_MOST = 2, /* ENGINE_PUNCT_MOST_LIST */
    ENGINE_PUNCT_ALL = 3,
};
/* "some": speech-dispatcher's espeak module's default list. "most": every ASCII mark but the
 * ones reading aloud already shows by its pauses and tune (. , ? ! ' "). */
#define ENGINE_PUNCT_SOME_LIST L"@/+-_"
#define ENGINE_PUNCT_MOST_LIST L"#$%&()*+-/:;<=>@[\\]^_`{|}~"

/* How a capital letter is signalled: espeakCAPITALS' values (0 none, 2 the word "capital",
 * 3 and more a pitch raise in Hz; 1, a sound icon, needs sound files espeak-ng has none of). */
enum {
    ENGINE_CAPITALS_NONE = 0,
    ENGINE_CAPITALS_WORD = 2,
    ENGINE_CAPITALS_PITCH = 20,
};

typedef struct {
    int32_t sample_rate; /* espeak_Initialize's answer */
} engine_ready_t;

typedef struct {
    int32_t text_position; /* 1-based, in characters */
    int32_t length;        /* in characters */
    int32_t sample;        /* the word's first sample, from the start of the synthesis */
} engine_word_t;

enum {
    ENGINE_DONE_OK = 0,
    ENGINE_DONE_VOICE_REFUSED = 1, /* `status` is espeak-ng's error */
    ENGINE_DONE_SYNTH_FAILED = 2,  /* `status` is espeak-ng's error */
    ENGINE_DONE_ABORTED = 3,
};

typedef struct {
    int32_t outcome; /* ENGINE_DONE_… */
    int32_t status;  /* espeak_ERROR */
} engine_done_t;

/* The largest message either side accepts: a request's text is bounded by this too. */
#define ENGINE_MESSAGE_LIMIT (64u * 1024u * 1024u)

/* [engine holder] Selects `name` as the command line does: a voice's file or name
 * ("gmw/en", "en-us", "en+f3"), else the best voice for a language ("en-gb"). Shared by the
 * plugin's engine and the helper's, so both choose the same voice for a name. */
static inline espeak_ERROR engine_select_voice_by_name(const char *name) {
    espeak_ERROR status = espeak_SetVoiceByName(name);
    if (status != EE_OK) {
        espeak_VOICE properties;
        memset(&properties, 0, sizeof properties);
        properties.languages = name;
        status = espeak_SetVoiceByProperties(&properties);
    }
    return status;
}

/* [engine holder] Sets the prosody, punctuation and capitals, after the voice: selecting a
 * voice resets the prosody, and the last holder's settings may differ. A value out of range
 * (from a helper's peer) is taken as none. */
static inline espeak_ERROR engine_set_prosody(const engine_request_t *request) {
    espeak_ERROR status;
    if ((status = espeak_SetParameter(espeakRATE, request->rate, 0)) != EE_OK) return status;
    if ((status = espeak_SetParameter(espeakPITCH, request->pitch, 0)) != EE_OK) return status;
    if ((status = espeak_SetParameter(espeakVOLUME, request->volume, 0)) != EE_OK) return status;
    int punctuation = espeakPUNCT_NONE;
    switch (request->punctuation) {
    case ENGINE_PUNCT_SOME:
    case ENGINE_PUNCT_MOST:
        if ((status = espeak_SetPunctuationList(request->punctuation == ENGINE_PUNCT_SOME ? ENGINE_PUNCT_SOME_LIST
                                                                                          : ENGINE_PUNCT_MOST_LIST)) != EE_OK) {
            return status;
        }
        punctuation = espeakPUNCT_SOME;
        break;
    case ENGINE_PUNCT_ALL: punctuation = espeakPUNCT_ALL; break;
    default: break;
    }
    const int capitals = request->capitals == ENGINE_CAPITALS_WORD || request->capitals == ENGINE_CAPITALS_PITCH
        ? request->capitals : ENGINE_CAPITALS_NONE;
    /* espeak-ng 1.51 answers these two with an error though it applies them (its SetParameter
     * falls through to its default case): their status says nothing, so it is not looked at.
     * The tests compare the audio with the command line's `--punct` and `-k`. */
    (void)espeak_SetParameter(espeakPUNCTUATION, punctuation, 0);
    (void)espeak_SetParameter(espeakCAPITALS, capitals, 0);
    return EE_OK;
}

/* The flags every synthesis uses: the text as UTF-8, no SSML or [[phoneme]] markup, with the
 * end-of-sentence pause (ENDPAUSE) the espeak-ng command line also adds. */
#define ENGINE_SYNTH_FLAGS (espeakCHARS_UTF8 | espeakENDPAUSE)

#endif
