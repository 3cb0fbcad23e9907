/*
 * Test-only plugin: `test-events`, a processor that records every event its `process` calls
 * carry (events.h) and every call, so Tests/SluicePluginsTests can check that parameter
 * changes and markers arrive, in order, at the frames they apply from.
 *
 * Audio: out[n] = in[n] × gain(n), where `gain` (live) steps to a new value at its event's
 * offset — no ramp, so a test sees exactly which frame a change applied from. `key` is read
 * by nothing: it is there to carry markers on a second input.
 *
 * Records go to log `log` (0 … 15; tests running at once use different logs), cleared at
 * `activate` and `reset`, and are read with the exported `test_events_copy`: eight doubles
 * each,
 *
 *     kind 1 (a parameter): index, 0, offset, frame, value, 0, 0
 *     kind 2 (a marker):    marker kind, input, offset, frame, utterance, flags, text_start·65536 + text_end
 *     kind 3 (a call):      frames, event_count, 0, position, 0, 0, 0
 *     kind 9 (a broken rule): code, event index, offset, position, 0, 0, 0
 *
 * where frame = position + offset: the frame of the stream the event applies from. Broken
 * rules: 1 events out of offset order, 2 an offset past the call's frames, 3 a
 * sluice_process_t smaller than version 2's, 4 a call of 0 frames without events, 5 an event
 * kind this plugin does not know, 6 an event smaller than the old form of its kind, 7 a
 * parameter event with room for `param_name` whose name is missing or does not name the
 * parameter at its `param_index`.
 *
 * `bad-vtable: true` hands the host a vtable whose `size` is 0, which it must refuse.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/sluice.h>

/* MARK: The logs */

enum { LOG_COUNT = 16, LOG_CAPACITY = 8192, RECORD_DOUBLES = 8 };

typedef struct event_log {
    double records[LOG_CAPACITY][RECORD_DOUBLES];
    /* Records written; the writer publishes each with a release store. */
    _Atomic uint32_t count;
} event_log_t;

static event_log_t logs[LOG_COUNT];

/* [audio-thread] Appends a record; drops it when the log is full (the count stops there). */
static void record(uint32_t log, double kind, double a, double b, double c, double d, double e, double f, double g) {
    event_log_t *target = &logs[log % LOG_COUNT];
    const uint32_t index = atomic_load_explicit(&target->count, memory_order_relaxed);
    if (index >= LOG_CAPACITY) return;
    double *slot = target->records[index];
    slot[0] = kind, slot[1] = a, slot[2] = b, slot[3] = c, slot[4] = d, slot[5] = e, slot[6] = f, slot[7] = g;
    atomic_store_explicit(&target->count, index + 1, memory_order_release);
}

/* [any-thread] Copies at most `capacity` records of log `log` into `out` (8 doubles each);
 * returns how many the log holds. Read it once the graph has stopped. */
SLUICE_EXPORT uint32_t test_events_copy(uint32_t log, double *out, uint32_t capacity);
SLUICE_EXPORT uint32_t test_events_copy(uint32_t log, double *out, uint32_t capacity) {
    event_log_t *source = &logs[log % LOG_COUNT];
    const uint32_t count = atomic_load_explicit(&source->count, memory_order_acquire);
    const uint32_t copied = count < capacity ? count : capacity;
    if (copied > 0) memcpy(out, source->records, (size_t)copied * RECORD_DOUBLES * sizeof(double));
    return count;
}

/* MARK: Descriptor */

static const sluice_port_descriptor_t recorder_inputs[] = {
    {"in", SLUICE_MEDIUM_FRAMES, "Audio, multiplied by `gain`"},
    {"key", SLUICE_MEDIUM_FRAMES, "A second input, for its markers; its audio is ignored"},
};

static const sluice_port_descriptor_t recorder_outputs[] = {
    {"out", SLUICE_MEDIUM_FRAMES, "`in` times `gain`"},
};

static const sluice_param_descriptor_t recorder_params[] = {
    {"gain", SLUICE_PARAM_NUMBER, 0, 4, NULL, 0, false, true, {1, 0, false, NULL}, NULL,
     "Linear gain; live, stepping at its event's frame.", sizeof(sluice_param_descriptor_t), SLUICE_PARAM_LIVE},
    {"steps", SLUICE_PARAM_INTEGER, 0, 1000, NULL, 0, false, true, {0, 0, false, NULL}, NULL,
     "An integer that only gets recorded; live.", sizeof(sluice_param_descriptor_t), SLUICE_PARAM_LIVE},
    {"log", SLUICE_PARAM_INTEGER, 0, LOG_COUNT - 1, NULL, 0, false, true, {0, 0, false, NULL}, NULL,
     "Which log the records go to.", sizeof(sluice_param_descriptor_t), 0},
    {"bad-vtable", SLUICE_PARAM_BOOLEAN, 0, 0, NULL, 0, false, true, {0, 0, false, NULL}, NULL,
     "Hand the host a vtable whose size is 0.", sizeof(sluice_param_descriptor_t), 0},
};

enum { PARAM_GAIN, PARAM_STEPS, PARAM_LOG, PARAM_BAD_VTABLE, PARAM_COUNT };

static const sluice_node_descriptor_t recorder_descriptor = {
    "test-events",
    SLUICE_NODE_PROCESSOR,
    "Records the events and calls `process` gets (a test processor).",
    recorder_inputs, 2,
    recorder_outputs, 1,
    recorder_params, PARAM_COUNT,
    sizeof(sluice_node_descriptor_t),
};

/* MARK: Instance */

typedef struct recorder {
    uint32_t log;
    double gain;
} recorder_t;

static bool recorder_activate(void *instance, uint32_t sample_rate, uint32_t max_frames, uint32_t channels,
                              sluice_error_t *error) {
    recorder_t *self = (recorder_t *)instance;
    (void)sample_rate, (void)max_frames, (void)channels, (void)error;
    atomic_store_explicit(&logs[self->log].count, 0, memory_order_release);
    return true;
}

/* Records one event and applies it. */
static void recorder_apply(recorder_t *self, const sluice_process_t *process, uint32_t index) {
    const sluice_event_header_t *header = process->events[index];
    const double frame = (double)(process->position + header->offset);
    if (header->kind == SLUICE_EVENT_PARAM) {
        if (header->size < offsetof(sluice_param_event_t, param_name)) {
            record(self->log, 9, 6, index, header->offset, (double)process->position, 0, 0, 0);
            return;
        }
        const sluice_param_event_t *event = (const sluice_param_event_t *)header;
        record(self->log, 1, event->param_index, 0, header->offset, frame, event->value, 0, 0);
        /* A host that sends the name (events.h) sends the index of the same parameter; an
         * event of the size before names were added goes by its index. */
        const bool named = SLUICE_EVENT_HAS_FIELD(event, sluice_param_event_t, param_name);
        if (named && (event->param_name == NULL || event->param_index >= PARAM_COUNT
                      || strcmp(event->param_name, recorder_params[event->param_index].name) != 0)) {
            record(self->log, 9, 7, index, header->offset, (double)process->position, 0, 0, 0);
            return;
        }
        if (named ? strcmp(event->param_name, "gain") == 0 : event->param_index == PARAM_GAIN) self->gain = event->value;
    } else if (header->kind == SLUICE_EVENT_MARKER) {
        if (header->size < sizeof(sluice_marker_event_t)) {
            record(self->log, 9, 6, index, header->offset, (double)process->position, 0, 0, 0);
            return;
        }
        const sluice_marker_event_t *event = (const sluice_marker_event_t *)header;
        record(self->log, 2, event->marker, event->input, header->offset, frame, event->utterance, event->flags,
               (double)event->text_start * 65536.0 + (double)event->text_end);
    } else {
        record(self->log, 9, 5, index, header->offset, (double)process->position, 0, 0, 0);
    }
}

static sluice_process_status_t recorder_process(void *instance, const sluice_process_t *process) {
    recorder_t *self = (recorder_t *)instance;
    const uint32_t log = self->log;
    if (process->size < sizeof(sluice_process_t)) {
        record(log, 9, 3, 0, 0, (double)process->position, 0, 0, 0);
        return SLUICE_PROCESS_ERROR;
    }
    record(log, 3, process->frames, process->event_count, 0, (double)process->position, 0, 0, 0);
    if (process->frames == 0 && process->event_count == 0) record(log, 9, 4, 0, 0, (double)process->position, 0, 0, 0);
    uint32_t last = 0;
    for (uint32_t i = 0; i < process->event_count; i++) {
        const uint32_t offset = process->events[i]->offset;
        if (offset < last) record(log, 9, 1, i, offset, (double)process->position, 0, 0, 0);
        if (offset >= process->frames && !(process->frames == 0 && offset == 0)) {
            record(log, 9, 2, i, offset, (double)process->position, 0, 0, 0);
        }
        last = offset;
    }
    const float *in = process->inputs[0];
    float *out = process->outputs[0];
    const uint32_t channels = process->channels;
    uint32_t next = 0;
    for (uint32_t n = 0; n < process->frames; n++) {
        while (next < process->event_count && process->events[next]->offset <= n) recorder_apply(self, process, next++);
        for (uint32_t c = 0; c < channels; c++) out[n * channels + c] = (float)(in[n * channels + c] * self->gain);
    }
    while (next < process->event_count) recorder_apply(self, process, next++);
    return SLUICE_PROCESS_CONTINUE;
}

static void recorder_reset(void *instance) {
    recorder_t *self = (recorder_t *)instance;
    atomic_store_explicit(&logs[self->log].count, 0, memory_order_release);
}

static void recorder_deactivate(void *instance) {
    (void)instance;
}

static void recorder_destroy(void *instance) {
    free(instance);
}

static const sluice_processor_vtable_t recorder_vtable = {
    recorder_activate, recorder_process, recorder_reset, recorder_deactivate, recorder_destroy,
    sizeof(sluice_processor_vtable_t),
};

/* What a plugin that forgot `size` hands over. */
static const sluice_processor_vtable_t unsized_vtable = {
    recorder_activate, recorder_process, recorder_reset, recorder_deactivate, recorder_destroy, 0,
};

/* MARK: Factory */

static uint32_t factory_count(const sluice_node_factory_t *factory) {
    (void)factory;
    return 1;
}

static const sluice_node_descriptor_t *factory_get_descriptor(const sluice_node_factory_t *factory, uint32_t index) {
    (void)factory;
    return index == 0 ? &recorder_descriptor : NULL;
}

static bool factory_create_provider(const sluice_node_factory_t *factory, const char *type_name,
                                    const sluice_param_value_t *params, uint32_t param_count,
                                    sluice_provider_t *provider, sluice_error_t *error) {
    (void)factory, (void)type_name, (void)params, (void)param_count, (void)provider;
    snprintf(error->code, sizeof error->code, "unknown-type");
    snprintf(error->message, sizeof error->message, "this plugin has no providers");
    return false;
}

static bool factory_create_processor(const sluice_node_factory_t *factory, const char *type_name,
                                     const sluice_param_value_t *params, uint32_t param_count,
                                     sluice_processor_t *processor, sluice_error_t *error) {
    (void)factory, (void)type_name, (void)error;
    recorder_t *self = (recorder_t *)calloc(1, sizeof *self);
    if (self == NULL) return false;
    self->gain = 1;
    bool unsized = false;
    for (uint32_t i = 0; i < param_count; i++) {
        if (strcmp(params[i].name, "gain") == 0) self->gain = params[i].value.number;
        else if (strcmp(params[i].name, "log") == 0) self->log = (uint32_t)params[i].value.integer % LOG_COUNT;
        else if (strcmp(params[i].name, "bad-vtable") == 0) unsized = params[i].value.boolean;
    }
    processor->instance = self;
    processor->vtable = unsized ? &unsized_vtable : &recorder_vtable;
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
