/*
 * The espeak plugin's engines (engines.h).
 *
 * espeak-ng keeps its state in process globals and is not reentrant, so a process has one
 * engine: it is initialised once (never terminated: the library stays mapped) and one
 * synthesis thread at a time holds it for a whole espeak_Synth call, setting its voice and
 * prosody first. Many voices in one process would all take turns on one core; so, up to the
 * `engines` limit, a thread that finds every engine busy starts a helper process instead
 * (`sluice-espeak-engine`, engine/main.c), which is one more engine, kept for later
 * utterances. Threads that find no engine and no room for a helper wait in a queue and get
 * engines in the order they asked: the releasing holder hands its engine straight to the
 * longest waiter, waking only that thread.
 *
 * A helper speaks engine/protocol.h over a Unix socket. It is started with the signals a
 * terminal sends left to the host (a process group of its own), and it ends when its socket
 * closes: when the last instance closes, or when the host dies. One that dies mid-utterance
 * fails that utterance with `engine-ended`, and the next holder of its slot starts another.
 */
#define _GNU_SOURCE /* posix_spawn_file_actions_addclosefrom_np */
#include "engines.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* The most engines a process runs: the in-process one and helpers. */
#define ENGINES_MAX 64
/* How long a wait for an engine lasts at most before the waiter looks at its stop flag
 * again: wake-ups come sooner; this bounds one lost to `cancel`, which must not block. */
#define WAIT_BACKSTOP_NS (20 * 1000 * 1000)

struct espeak_engine {
    bool helper;
    /* Under `engines_mutex`. */
    bool busy;
    bool failed; /* a helper that could not start: never handed out again */
    /* The holder's alone. */
    bool running; /* the in-process engine is initialised, or the helper's process is up */
    pid_t pid;
    int socket;
    char voice[ENGINE_VOICE_CAPACITY]; /* the in-process engine's selected voice ("": none) */
    short *chunk;                      /* a helper's last chunk, as received */
    size_t chunk_capacity;
};

typedef struct engine_waiter {
    struct engine_waiter *next;
    void *owner;
    int limit; /* it may take engines [0, limit) */
    pthread_cond_t granted_signal;
    espeak_engine_t *granted; /* set by the holder that released it */
} engine_waiter_t;

static pthread_once_t local_once = PTHREAD_ONCE_INIT;
/* The rate espeak_Initialize returned, or -1 when it failed. Written once under local_once. */
static int local_rate = -1;

static pthread_mutex_t engines_mutex = PTHREAD_MUTEX_INITIALIZER;
/* [0] is the in-process engine; helpers follow, `engine_count` slots in use. */
static espeak_engine_t engines[ENGINES_MAX];
static int engine_count = 1;
static int open_instances = 0;
/* A helper failed to start: no more are tried until the last instance closes. */
static bool helpers_broken = false;
/* The process is exiting (engines_at_exit ran): helpers are being reaped there. */
static bool exiting = false;
static bool exit_hook_installed = false;
static engine_waiter_t *queue_head = NULL;
static engine_waiter_t *queue_tail = NULL;
static atomic_int waiter_count = 0;

static char helper_path[PATH_MAX] = "";

/* The sink of the in-process engine's synthesis in progress: set and cleared by its holder,
 * read by espeak-ng's callback, which runs on that thread inside espeak_Synth. */
static const engine_sink_t *local_sink = NULL;
/* The sink asked the synthesis in progress to stop. The holder's alone, like `local_sink`. */
static bool local_aborted = false;

static void fail(sluice_error_t *error, const char *code, const char *message) {
    if (error == NULL) return;
    snprintf(error->code, sizeof error->code, "%s", code);
    snprintf(error->message, sizeof error->message, "%s", message);
}

/* MARK: The in-process engine */

static int on_local_samples(short *samples, int count, espeak_EVENT *events) {
    /* SAFETY: only the in-process engine's holder calls espeak_Synth, and espeak-ng
     * (synchronous mode) calls back on that thread before espeak_Synth returns, so
     * `local_sink` is that holder's, set before the call and cleared after it. */
    const engine_sink_t *sink = local_sink;
    if (sink == NULL) return 1;
    local_aborted = true; /* until the chunk is handed on */
    /* A chunk's word events come with it or before it: handed on before its samples. */
    for (const espeak_EVENT *event = events; event != NULL && event->type != espeakEVENT_LIST_TERMINATED; event++) {
        if (event->type == espeakEVENT_WORD &&
            !sink->word(sink->context, event->text_position, event->length, event->sample)) {
            return 1;
        }
    }
    if (samples != NULL && count > 0 && !sink->samples(sink->context, samples, (size_t)count)) return 1;
    local_aborted = false;
    return 0;
}

static void local_initialise(void) {
    /* DONT_EXIT: report missing data instead of exiting the host. */
    local_rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, ENGINE_CHUNK_MS, NULL, espeakINITIALIZE_DONT_EXIT);
    if (local_rate > 0) espeak_SetSynthCallback(on_local_samples);
    engines[0].running = local_rate > 0;
}

int engines_initialise(void) {
    pthread_once(&local_once, local_initialise);
    return local_rate;
}

static espeak_ERROR local_select(espeak_engine_t *engine, const char *voice) {
    if (engine->voice[0] != '\0' && strcmp(engine->voice, voice) == 0) return EE_OK;
    engine->voice[0] = '\0';
    const espeak_ERROR status = engine_select_voice_by_name(voice);
    if (status == EE_OK) snprintf(engine->voice, sizeof engine->voice, "%s", voice);
    return status;
}

static void voice_refused(const char *voice, espeak_ERROR status, sluice_error_t *error) {
    char message[sizeof error->message];
    snprintf(message, sizeof message, "espeak-ng refused voice '%s' (error %d); `espeak-ng --voices` lists them",
             voice, (int)status);
    fail(error, "unknown-voice", message);
}

static void synthesis_failed(espeak_ERROR status, sluice_error_t *error) {
    char message[128];
    snprintf(message, sizeof message, "espeak-ng failed to synthesise an utterance (error %d)", (int)status);
    fail(error, "synthesis-failed", message);
}

static bool local_speak(espeak_engine_t *engine, const engine_request_t *settings, const char *text,
                        const engine_sink_t *sink, sluice_error_t *error) {
    espeak_ERROR status = local_select(engine, settings->voice);
    if (status == EE_OK) status = engine_set_prosody(settings);
    if (status != EE_OK) {
        voice_refused(settings->voice, status, error);
        return false;
    }
    local_aborted = false;
    local_sink = sink;
    status = espeak_Synth(text, strlen(text) + 1, 0, POS_CHARACTER, 0, ENGINE_SYNTH_FLAGS, NULL, NULL);
    local_sink = NULL;
    /* An abort the sink asked for is not a failure: the caller knows why it asked. */
    if (status != EE_OK && !local_aborted) {
        synthesis_failed(status, error);
        return false;
    }
    return true;
}

/* MARK: Helper processes */

void engines_locate_helper(const char *plugin_path) {
    const char *slash = plugin_path != NULL ? strrchr(plugin_path, '/') : NULL;
    if (slash == NULL) {
        helper_path[0] = '\0';
        return;
    }
    snprintf(helper_path, sizeof helper_path, "%.*s/%s", (int)(slash - plugin_path), plugin_path, ENGINE_HELPER_NAME);
}

/* Sends all of `size` bytes; false when the helper is gone (no SIGPIPE: MSG_NOSIGNAL). */
static bool send_all(int socket, const void *bytes, size_t size) {
    while (size > 0) {
        const ssize_t sent = send(socket, bytes, size, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) return false;
        bytes = (const char *)bytes + sent;
        size -= (size_t)sent;
    }
    return true;
}

static bool receive_all(int socket, void *bytes, size_t size) {
    while (size > 0) {
        const ssize_t got = recv(socket, bytes, size, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        bytes = (char *)bytes + got;
        size -= (size_t)got;
    }
    return true;
}

/* [holder] Ends the helper's process (closing its socket ends it; `kill` first when it may be
 * in the middle of something) and describes how it ended into `how`. */
static void helper_stop(espeak_engine_t *engine, bool kill_it, char *how, size_t how_size) {
    if (!engine->running) return;
    /* Under the lock, so engines_at_exit sees a helper whole or not at all. */
    pthread_mutex_lock(&engines_mutex);
    const pid_t pid = engine->pid;
    const int socket = engine->socket;
    engine->running = false;
    engine->socket = -1;
    engine->pid = 0;
    /* Exiting, engines_at_exit may have reaped it already: its pid may be another's now. */
    const bool may_kill = kill_it && !exiting;
    pthread_mutex_unlock(&engines_mutex);
    if (may_kill) kill(pid, SIGKILL);
    close(socket);
    int status = 0;
    pid_t reaped;
    while ((reaped = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
    if (how != NULL) {
        if (reaped != pid) snprintf(how, how_size, "ended");
        else if (WIFSIGNALED(status)) snprintf(how, how_size, "was killed by signal %d", WTERMSIG(status));
        else snprintf(how, how_size, "exited with status %d", WEXITSTATUS(status));
    }
}

/* At the host's exit (which need not destroy its nodes first): every helper's socket is shut,
 * so it ends at its next read or write, and it is reaped here, so its CPU time counts in the
 * host's (wait4, `time`) and no orphan outlives the host. One still there after a second is
 * killed. */
static void engines_at_exit(void) {
    pid_t pids[ENGINES_MAX];
    int count = 0;
    pthread_mutex_lock(&engines_mutex);
    exiting = true;
    for (int index = 1; index < engine_count; index++) {
        if (!engines[index].running) continue;
        shutdown(engines[index].socket, SHUT_RDWR);
        pids[count++] = engines[index].pid;
    }
    pthread_mutex_unlock(&engines_mutex);
    for (int index = 0; index < count; index++) {
        for (int attempt = 0; attempt < 100; attempt++) {
            const pid_t reaped = waitpid(pids[index], NULL, WNOHANG);
            if (reaped != 0) break; /* reaped, or not ours to reap any more */
            if (attempt == 99) {
                kill(pids[index], SIGKILL);
                waitpid(pids[index], NULL, 0);
            }
            usleep(10 * 1000);
        }
    }
}

/* [holder] Starts `engine`'s helper process and waits for its READY; false with `why`. */
static bool helper_start(espeak_engine_t *engine, char *why, size_t why_size) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        snprintf(why, why_size, "socketpair: %s", strerror(errno));
        return false;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    /* dup2 clears close-on-exec on the copies: the helper keeps only stdin, stdout, stderr. */
    posix_spawn_file_actions_adddup2(&actions, pair[1], 0);
    posix_spawn_file_actions_adddup2(&actions, pair[1], 1);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    /* A process group of its own: a terminal's Ctrl-C goes to the host, which decides when
     * speech stops; the helper ends when the host closes its socket. */
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    char *arguments[] = {helper_path, NULL};
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, helper_path, &actions, &attributes, arguments, environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    close(pair[1]);
    if (spawned != 0) {
        close(pair[0]);
        snprintf(why, why_size, "cannot run '%s': %s", helper_path, strerror(spawned));
        return false;
    }
    pthread_mutex_lock(&engines_mutex);
    engine->pid = pid;
    engine->socket = pair[0];
    engine->running = true;
    if (!exit_hook_installed) exit_hook_installed = atexit(engines_at_exit) == 0;
    pthread_mutex_unlock(&engines_mutex);
    engine_header_t header;
    engine_ready_t ready;
    if (!receive_all(engine->socket, &header, sizeof header) || header.type != ENGINE_READY ||
        header.size != sizeof ready || !receive_all(engine->socket, &ready, sizeof ready)) {
        char how[64];
        helper_stop(engine, true, how, sizeof how);
        snprintf(why, why_size, "'%s' %s before it was ready", helper_path, how);
        return false;
    }
    if (ready.sample_rate != local_rate) {
        helper_stop(engine, true, NULL, 0);
        snprintf(why, why_size, "'%s' gives %d Hz, this process's espeak-ng %d Hz", helper_path,
                 (int)ready.sample_rate, local_rate);
        return false;
    }
    return true;
}

/* [holder] Sends a request, starting the helper again once when its process has gone. */
static bool helper_send(espeak_engine_t *engine, uint32_t type, const engine_request_t *request, const char *text,
                        sluice_error_t *error) {
    const size_t text_size = text != NULL ? strlen(text) + 1 : 0;
    const engine_header_t header = {type, (uint32_t)(sizeof *request + text_size)};
    for (int attempt = 0; attempt < 2; attempt++) {
        char why[200] = "";
        if (!engine->running && !helper_start(engine, why, sizeof why)) {
            char message[sizeof error->message];
            snprintf(message, sizeof message, "cannot start an espeak-ng engine process: %s", why);
            fail(error, "engine-ended", message);
            return false;
        }
        if (send_all(engine->socket, &header, sizeof header) && send_all(engine->socket, request, sizeof *request) &&
            send_all(engine->socket, text, text_size)) {
            return true;
        }
        helper_stop(engine, true, NULL, 0); /* gone while idle: once more with a new one */
    }
    fail(error, "engine-ended", "the espeak-ng engine process ended twice before it took a request");
    return false;
}

/* [holder] Reads the replies to a request until its DONE, handing words and chunks to `sink`
 * (NULL: none may come). When the sink says stop, the helper is asked to abort and what it
 * sends until its DONE is dropped. False with `error` when the helper ends or breaks the
 * protocol; its process is then gone. */
static bool helper_replies(espeak_engine_t *engine, const engine_sink_t *sink, engine_done_t *done,
                           sluice_error_t *error) {
    bool dropping = false;
    for (;;) {
        engine_header_t header;
        bool intact = receive_all(engine->socket, &header, sizeof header) && header.size <= ENGINE_MESSAGE_LIMIT;
        bool handed_on = true;
        if (intact && header.type == ENGINE_DONE && header.size == sizeof *done) {
            if (receive_all(engine->socket, done, sizeof *done)) return true;
            intact = false;
        } else if (intact && header.type == ENGINE_WORD && header.size == sizeof(engine_word_t) && sink != NULL) {
            engine_word_t word;
            intact = receive_all(engine->socket, &word, sizeof word);
            if (intact && !dropping) handed_on = sink->word(sink->context, word.text_position, word.length, word.sample);
        } else if (intact && header.type == ENGINE_AUDIO && header.size % sizeof(short) == 0 && sink != NULL) {
            if (header.size > engine->chunk_capacity) {
                short *grown = (short *)realloc(engine->chunk, header.size);
                if (grown == NULL) {
                    helper_stop(engine, true, NULL, 0);
                    fail(error, "out-of-memory", "cannot receive a chunk from the espeak-ng engine process");
                    return false;
                }
                engine->chunk = grown;
                engine->chunk_capacity = header.size;
            }
            intact = receive_all(engine->socket, engine->chunk, header.size);
            if (intact && !dropping && header.size > 0) {
                handed_on = sink->samples(sink->context, engine->chunk, header.size / sizeof(short));
            }
        } else {
            intact = false;
        }
        if (!intact) {
            const pid_t pid = engine->pid;
            char how[64];
            helper_stop(engine, true, how, sizeof how);
            char message[sizeof error->message];
            snprintf(message, sizeof message,
                     "the espeak-ng engine process (%s, pid %d) %s mid-utterance; the next utterance starts another",
                     ENGINE_HELPER_NAME, (int)pid, how);
            fail(error, "engine-ended", message);
            return false;
        }
        if (!handed_on) {
            /* The helper stops at its next chunk. A failed send means it is gone, which the
             * next receive reports. */
            static const engine_header_t abort_request = {ENGINE_ABORT, 0};
            (void)send_all(engine->socket, &abort_request, sizeof abort_request);
            dropping = true;
        }
    }
}

static bool helper_speak(espeak_engine_t *engine, const engine_request_t *settings, const char *text,
                         const engine_sink_t *sink, sluice_error_t *error) {
    engine_done_t done;
    if (!helper_send(engine, ENGINE_SPEAK, settings, text, error) || !helper_replies(engine, sink, &done, error)) {
        return false;
    }
    switch (done.outcome) {
    case ENGINE_DONE_OK:
    case ENGINE_DONE_ABORTED:
        return true;
    case ENGINE_DONE_VOICE_REFUSED:
        voice_refused(settings->voice, done.status, error);
        return false;
    default:
        synthesis_failed(done.status, error);
        return false;
    }
}

/* MARK: Holding an engine */

bool engine_is_helper(const espeak_engine_t *engine) {
    return engine->helper;
}

bool engine_select(espeak_engine_t *engine, const char *voice, sluice_error_t *error) {
    espeak_ERROR status;
    if (!engine->helper) {
        status = local_select(engine, voice);
    } else {
        engine_request_t request;
        memset(&request, 0, sizeof request);
        snprintf(request.voice, sizeof request.voice, "%s", voice);
        engine_done_t done;
        if (!helper_send(engine, ENGINE_SELECT, &request, NULL, error) || !helper_replies(engine, NULL, &done, error)) {
            return false;
        }
        status = done.outcome == ENGINE_DONE_OK ? EE_OK : (espeak_ERROR)done.status;
    }
    if (status != EE_OK) voice_refused(voice, status, error);
    return status == EE_OK;
}

bool engine_speak(espeak_engine_t *engine, const engine_request_t *settings, const char *text,
                  const engine_sink_t *sink, sluice_error_t *error) {
    return engine->helper ? helper_speak(engine, settings, text, sink, error)
                          : local_speak(engine, settings, text, sink, error);
}

/* MARK: The pool */

static void wait_briefly(pthread_cond_t *condition, pthread_mutex_t *mutex) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_nsec += WAIT_BACKSTOP_NS;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(condition, mutex, &deadline);
}

int engines_open(int requested, sluice_error_t *error) {
    /* Auto: one per online processor but one, which the host's own threads need (its JACK
     * thread and the worker running every voice's nodes). With one per processor on two
     * cores, 128 voices underran 1132 times where the host's engine alone played them clean
     * (docs/providers/espeak.md). */
    long wanted = requested > 0 ? requested : sysconf(_SC_NPROCESSORS_ONLN) - 1;
    if (wanted < 1) wanted = 1;
    if (wanted > ENGINES_MAX) wanted = ENGINES_MAX;
    if (wanted > 1 && (helper_path[0] == '\0' || access(helper_path, X_OK) != 0)) {
        if (requested > 0) {
            char message[sizeof error->message];
            snprintf(message, sizeof message,
                     "engines: %d needs the engine helper '%s' (installed beside the plugin), which cannot be run (%s); "
                     "reinstall Sluice, or set engines: 1",
                     requested, helper_path[0] != '\0' ? helper_path : ENGINE_HELPER_NAME, strerror(errno));
            fail(error, "engine-helper-missing", message);
            return 0;
        }
        wanted = 1; /* auto: this plugin was installed without its helper, so one engine */
    }
    pthread_mutex_lock(&engines_mutex);
    open_instances++;
    pthread_mutex_unlock(&engines_mutex);
    return (int)wanted;
}

void engines_close(void) {
    /* The last instance's helpers end: their slots are taken out under the lock, and their
     * processes stopped after it (an exit is quick, but not a thing to hold a lock over). */
    espeak_engine_t ending[ENGINES_MAX];
    int ending_count = 0;
    pthread_mutex_lock(&engines_mutex);
    if (--open_instances == 0) {
        for (int index = 1; index < engine_count; index++) {
            if (engines[index].running) ending[ending_count++] = engines[index];
            free(engines[index].chunk);
            memset(&engines[index], 0, sizeof engines[index]);
        }
        engine_count = 1;
        helpers_broken = false;
    }
    pthread_mutex_unlock(&engines_mutex);
    for (int index = 0; index < ending_count; index++) helper_stop(&ending[index], false, NULL, 0);
}

/* [engines_mutex held] A free engine of the first `limit`, the in-process one first; else a
 * new helper slot when `limit` allows one (busy, not started: its taker starts it); else NULL. */
static espeak_engine_t *take_free_engine(int limit) {
    for (int index = 0; index < engine_count && index < limit; index++) {
        espeak_engine_t *engine = &engines[index];
        if (!engine->busy && !engine->failed) {
            engine->busy = true;
            return engine;
        }
    }
    if (engine_count < limit && !helpers_broken) {
        espeak_engine_t *engine = &engines[engine_count++];
        memset(engine, 0, sizeof *engine);
        engine->helper = true;
        engine->busy = true;
        engine->socket = -1;
        return engine;
    }
    return NULL;
}

/* [engines_mutex held] Waits in the queue for an engine; NULL when told to stop first. */
static espeak_engine_t *wait_in_queue(void *owner, int limit, bool (*should_stop)(void *)) {
    engine_waiter_t waiter = {.next = NULL, .owner = owner, .limit = limit, .granted = NULL};
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&waiter.granted_signal, &attributes);
    pthread_condattr_destroy(&attributes);
    if (queue_tail != NULL) queue_tail->next = &waiter; else queue_head = &waiter;
    queue_tail = &waiter;
    atomic_fetch_add_explicit(&waiter_count, 1, memory_order_relaxed);
    while (waiter.granted == NULL && !should_stop(owner)) wait_briefly(&waiter.granted_signal, &engines_mutex);
    atomic_fetch_sub_explicit(&waiter_count, 1, memory_order_relaxed);
    if (waiter.granted == NULL) {
        /* Told to stop while waiting: leave the queue (no holder has taken this waiter). */
        engine_waiter_t **link = &queue_head;
        engine_waiter_t *previous = NULL;
        while (*link != &waiter) {
            previous = *link;
            link = &(*link)->next;
        }
        *link = waiter.next;
        if (queue_tail == &waiter) queue_tail = previous;
    }
    pthread_cond_destroy(&waiter.granted_signal);
    return waiter.granted;
}

espeak_engine_t *engines_acquire(void *owner, int limit, bool (*should_stop)(void *)) {
    for (;;) {
        pthread_mutex_lock(&engines_mutex);
        espeak_engine_t *engine = take_free_engine(limit);
        if (engine == NULL) engine = wait_in_queue(owner, limit, should_stop);
        pthread_mutex_unlock(&engines_mutex);
        if (engine == NULL || !engine->helper || engine->running) return engine;
        /* A helper not running: a new slot, or one whose process ended. Started here, outside
         * the lock; one that cannot start is never handed out again, and no more are tried. */
        char why[200];
        if (helper_start(engine, why, sizeof why)) return engine;
        fprintf(stderr, "sluice-espeak: cannot start an engine process (%s); voices share the engines running\n", why);
        pthread_mutex_lock(&engines_mutex);
        engine->failed = true;
        helpers_broken = true;
        pthread_mutex_unlock(&engines_mutex);
    }
}

void engines_release(espeak_engine_t *engine) {
    const int index = (int)(engine - engines);
    pthread_mutex_lock(&engines_mutex);
    /* The longest waiter that may take this engine. */
    engine_waiter_t **link = &queue_head;
    engine_waiter_t *previous = NULL;
    while (*link != NULL && (*link)->limit <= index) {
        previous = *link;
        link = &(*link)->next;
    }
    engine_waiter_t *next = *link;
    if (next != NULL) {
        *link = next->next;
        if (queue_tail == next) queue_tail = previous;
        next->granted = engine; /* still busy: the engine passes straight on */
        pthread_cond_signal(&next->granted_signal);
    } else {
        engine->busy = false;
    }
    pthread_mutex_unlock(&engines_mutex);
}

void engines_wake(void *owner, bool may_block) {
    if (may_block) pthread_mutex_lock(&engines_mutex);
    else if (pthread_mutex_trylock(&engines_mutex) != 0) return; /* the waiter sees its flag at its backstop */
    for (engine_waiter_t *waiter = queue_head; waiter != NULL; waiter = waiter->next) {
        if (owner == NULL || waiter->owner == owner) pthread_cond_signal(&waiter->granted_signal);
    }
    pthread_mutex_unlock(&engines_mutex);
}

bool engines_contended(void) {
    return atomic_load_explicit(&waiter_count, memory_order_relaxed) > 0;
}
