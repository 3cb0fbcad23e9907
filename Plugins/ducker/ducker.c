/*
 * ducker — a Sluice processor plugin in plain C: lowers one input (music, `in`) while another
 * (`speech`) carries sound, as a radio host's voice ducks the music under it.
 *
 * It is also the worked example of docs/plugins.md: one file, the Sluice headers, nothing
 * else. Build it outside this repository with
 *
 *     cc $(pkg-config --cflags sluice-plugin) -std=c11 -shared -fPIC -fvisibility=hidden \
 *        -o libsluice-ducker.so ducker.c -lm
 *
 * The formula, per frame n (every port has the same channel count C):
 *
 *     peak(n)   = max over channels c of |speech[n][c]|
 *     since(n)  = frames since the last frame whose peak exceeded T (none yet: infinite)
 *     key(n)    = since(n) <= H                      the speech is "on" (held H frames)
 *     target(n) = key(n) ? D : 1
 *     a(n)      = target(n) < g(n-1) ? A : R         falling: attack, rising: release
 *     g(n)      = target(n) + a(n) * (g(n-1) - target(n)),   g(-1) = 1
 *     out[n][c] = (float)(in[n][c] * g(n))           in double, rounded to float
 *
 * with D = 10^(-depth/20), T = 10^(threshold/20), H = round(hold * rate),
 * A = exp(-1 / (attack * rate)) (0 when attack is 0), R likewise from release.
 * State (g, since) persists across calls and is cleared by reset.
 *
 * `depth` is live: a change to depth d applying from frame k (a parameter event, events.h)
 * moves D to D' = 10^(-d/20) in a straight line over M = round(ramp * rate) frames, so a change
 * never clicks, even with attack and release 0:
 *
 *     D(k + i) = D(k-1) + (D' - D(k-1)) * (i + 1) / M     for i = 0 … M-1, then D'
 *
 * (at once when M is 0; a change during a ramp starts a new one from where D is). The
 * formula above then uses D(n) for D. Markers (the other events) leave the ducker alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/sluice.h>

/* MARK: Descriptor */

static const sluice_port_descriptor_t ducker_inputs[] = {
    {"in", SLUICE_MEDIUM_FRAMES, "The audio to lower (music), Float32 frames"},
    {"speech", SLUICE_MEDIUM_FRAMES, "The key: while it sounds, `in` is lowered; same format as `in`"},
};

static const sluice_port_descriptor_t ducker_outputs[] = {
    {"out", SLUICE_MEDIUM_FRAMES, "`in` with the ducking gain applied"},
};

/* Every entry carries its `size` (common.h, "Growing the ABI") and its flags. */
#define DUCKER_PARAM(name, minimum, maximum, fallback, unit, flags, summary) \
    {name, SLUICE_PARAM_NUMBER, minimum, maximum, NULL, 0, false, true, {fallback, 0, false, NULL}, unit, summary, \
     sizeof(sluice_param_descriptor_t), flags}

static const sluice_param_descriptor_t ducker_params[] = {
    DUCKER_PARAM("depth", 0, 60, 12, "dB", SLUICE_PARAM_LIVE,
                 "How far `in` is lowered while the speech sounds; may change while playing, over `ramp`."),
    DUCKER_PARAM("threshold", -90, 0, -40, "dBFS", 0, "Speech peaks above this level key the ducking."),
    DUCKER_PARAM("attack", 0, 1, 0.01, "s", 0, "Time constant of the fall when speech starts; 0 is instant."),
    DUCKER_PARAM("hold", 0, 2, 0.1, "s", 0, "How long the key stays on after the last loud speech sample."),
    DUCKER_PARAM("release", 0, 5, 0.3, "s", 0, "Time constant of the rise once the key is off; 0 is instant."),
    DUCKER_PARAM("ramp", 0, 10, 0.02, "s", 0,
                 "How long a depth change takes while playing: a straight line, so it never clicks."),
};

enum { PARAM_DEPTH, PARAM_THRESHOLD, PARAM_ATTACK, PARAM_HOLD, PARAM_RELEASE, PARAM_RAMP, PARAM_COUNT };

static const sluice_node_descriptor_t ducker_descriptor = {
    "ducker",
    SLUICE_NODE_PROCESSOR,
    "Lowers `in` while `speech` carries sound (sidechain ducking), then brings it back.",
    ducker_inputs, 2,
    ducker_outputs, 1,
    ducker_params, PARAM_COUNT,
    sizeof(sluice_node_descriptor_t),
};

/* MARK: Instance */

typedef struct ducker {
    /* Parameters, as created. */
    double depth_db, threshold_db, attack_s, hold_s, release_s, ramp_s;
    /* Derived at activate. */
    double threshold, attack_coefficient, release_coefficient;
    uint64_t hold_frames, ramp_frames;
    uint32_t channels;
    bool active;
    /* D, moving towards `duck_target` by `duck_step` for `ramp_left` more frames. Live
     * changes persist across reset, as a fader's gain does. */
    double duck_gain, duck_target, duck_step;
    uint64_t ramp_left;
    /* Stream state, cleared by reset. */
    double gain;
    uint64_t since;
} ducker_t;

static void fail(sluice_error_t *error, const char *code, const char *message) {
    snprintf(error->code, sizeof error->code, "%s", code);
    snprintf(error->message, sizeof error->message, "%s", message);
}

static double coefficient(double seconds, uint32_t rate) {
    return seconds > 0 ? exp(-1.0 / (seconds * (double)rate)) : 0.0;
}

static bool ducker_activate(void *instance, uint32_t sample_rate, uint32_t max_frames, uint32_t channels,
                            sluice_error_t *error) {
    ducker_t *self = (ducker_t *)instance;
    (void)max_frames; /* nothing to allocate: the state is a few numbers */
    if (channels == 0 || sample_rate == 0) {
        fail(error, "bad-format", "the ducker needs at least one channel and a sample rate");
        return false;
    }
    self->duck_gain = pow(10.0, -self->depth_db / 20.0);
    self->duck_target = self->duck_gain;
    self->duck_step = 0.0;
    self->ramp_left = 0;
    self->ramp_frames = (uint64_t)llround(self->ramp_s * (double)sample_rate);
    self->threshold = pow(10.0, self->threshold_db / 20.0);
    self->attack_coefficient = coefficient(self->attack_s, sample_rate);
    self->release_coefficient = coefficient(self->release_s, sample_rate);
    self->hold_frames = (uint64_t)llround(self->hold_s * (double)sample_rate);
    self->channels = channels;
    self->gain = 1.0;
    self->since = UINT64_MAX;
    self->active = true;
    return true;
}

/* A parameter event: `depth` starts a ramp to its new D from this frame. */
static void ducker_apply(ducker_t *self, const sluice_event_header_t *header) {
    if (header->kind != SLUICE_EVENT_PARAM || header->size < offsetof(sluice_param_event_t, param_name)) return;
    const sluice_param_event_t *event = (const sluice_param_event_t *)header;
    /* By name where the host gives one (every host since it was added), else by index. */
    const bool named = SLUICE_EVENT_HAS_FIELD(event, sluice_param_event_t, param_name) && event->param_name != NULL;
    if (named ? strcmp(event->param_name, "depth") != 0 : event->param_index != PARAM_DEPTH) return;
    self->depth_db = event->value;
    self->duck_target = pow(10.0, -event->value / 20.0);
    if (self->ramp_frames == 0) {
        self->duck_gain = self->duck_target;
        self->ramp_left = 0;
    } else {
        self->duck_step = (self->duck_target - self->duck_gain) / (double)self->ramp_frames;
        self->ramp_left = self->ramp_frames;
    }
}

static sluice_process_status_t ducker_process(void *instance, const sluice_process_t *process) {
    ducker_t *self = (ducker_t *)instance;
    if (!self->active || process->input_count != 2 || process->output_count != 1) return SLUICE_PROCESS_ERROR;
    const float *in = process->inputs[0];
    const float *speech = process->inputs[1];
    float *out = process->outputs[0];
    const uint32_t channels = process->channels;
    double gain = self->gain;
    uint64_t since = self->since;
    /* Events arrive in order of offset: each applies before the frame at its offset. */
    uint32_t next = 0;
    for (uint32_t n = 0; n < process->frames; n++) {
        while (next < process->event_count && process->events[next]->offset <= n) {
            ducker_apply(self, process->events[next++]);
        }
        if (self->ramp_left > 0) {
            self->ramp_left--;
            /* Land exactly on the target, whatever rounding the steps accumulated. */
            self->duck_gain = self->ramp_left == 0 ? self->duck_target : self->duck_gain + self->duck_step;
        }
        float peak = 0.0f;
        for (uint32_t c = 0; c < channels; c++) {
            float level = fabsf(speech[n * channels + c]);
            if (level > peak) peak = level;
        }
        if ((double)peak > self->threshold) {
            since = 0;
        } else if (since != UINT64_MAX) {
            since++;
        }
        const double target = since <= self->hold_frames ? self->duck_gain : 1.0;
        const double a = target < gain ? self->attack_coefficient : self->release_coefficient;
        gain = target + a * (gain - target);
        for (uint32_t c = 0; c < channels; c++) {
            out[n * channels + c] = (float)((double)in[n * channels + c] * gain);
        }
    }
    /* Events of a call of 0 frames (or past its last frame) apply from the next call on. */
    while (next < process->event_count) ducker_apply(self, process->events[next++]);
    self->gain = gain;
    self->since = since;
    return SLUICE_PROCESS_CONTINUE;
}

static void ducker_reset(void *instance) {
    ducker_t *self = (ducker_t *)instance;
    self->gain = 1.0;
    self->since = UINT64_MAX;
}

static void ducker_deactivate(void *instance) {
    ((ducker_t *)instance)->active = false;
}

static void ducker_destroy(void *instance) {
    free(instance);
}

static const sluice_processor_vtable_t ducker_vtable = {
    ducker_activate, ducker_process, ducker_reset, ducker_deactivate, ducker_destroy,
    sizeof(sluice_processor_vtable_t),
};

/* MARK: Factory */

static uint32_t factory_count(const sluice_node_factory_t *factory) {
    (void)factory;
    return 1;
}

static const sluice_node_descriptor_t *factory_get_descriptor(const sluice_node_factory_t *factory, uint32_t index) {
    (void)factory;
    return index == 0 ? &ducker_descriptor : NULL;
}

static bool factory_create_provider(const sluice_node_factory_t *factory, const char *type_name,
                                    const sluice_param_value_t *params, uint32_t param_count,
                                    sluice_provider_t *provider, sluice_error_t *error) {
    (void)factory, (void)params, (void)param_count, (void)provider;
    char message[256];
    snprintf(message, sizeof message, "this plugin has no provider named '%s'", type_name);
    fail(error, "unknown-type", message);
    return false;
}

static bool factory_create_processor(const sluice_node_factory_t *factory, const char *type_name,
                                     const sluice_param_value_t *params, uint32_t param_count,
                                     sluice_processor_t *processor, sluice_error_t *error) {
    (void)factory;
    if (strcmp(type_name, ducker_descriptor.type_name) != 0) {
        char message[256];
        snprintf(message, sizeof message, "this plugin has no processor named '%s'", type_name);
        fail(error, "unknown-type", message);
        return false;
    }
    ducker_t *self = (ducker_t *)calloc(1, sizeof *self);
    if (self == NULL) {
        fail(error, "out-of-memory", "cannot allocate a ducker");
        return false;
    }
    /* Every parameter has a default, so the host passes all six; match them by name. */
    self->depth_db = 12;
    self->threshold_db = -40;
    self->attack_s = 0.01;
    self->hold_s = 0.1;
    self->release_s = 0.3;
    self->ramp_s = 0.02;
    for (uint32_t i = 0; i < param_count; i++) {
        const char *name = params[i].name;
        const double value = params[i].value.number;
        if (strcmp(name, "depth") == 0) self->depth_db = value;
        else if (strcmp(name, "threshold") == 0) self->threshold_db = value;
        else if (strcmp(name, "attack") == 0) self->attack_s = value;
        else if (strcmp(name, "hold") == 0) self->hold_s = value;
        else if (strcmp(name, "release") == 0) self->release_s = value;
        else if (strcmp(name, "ramp") == 0) self->ramp_s = value;
    }
    processor->instance = self;
    processor->vtable = &ducker_vtable;
    return true;
}

static const sluice_node_factory_t factory = {
    factory_count, factory_get_descriptor, factory_create_provider, factory_create_processor,
};

/* MARK: Entry */

static bool entry_init(const char *plugin_path) {
    (void)plugin_path;
    return true;
}

static void entry_deinit(void) {}

static const void *entry_get_factory(const char *factory_id) {
    return strcmp(factory_id, SLUICE_NODE_FACTORY_ID) == 0 ? &factory : NULL;
}

static const sluice_plugin_entry_t entry = {
    SLUICE_ABI_VERSION, entry_init, entry_deinit, entry_get_factory,
};

SLUICE_EXPORT const sluice_plugin_entry_t *sluice_plugin_entry(void) {
    return &entry;
}
