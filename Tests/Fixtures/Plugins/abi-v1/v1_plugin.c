/*
 * Test-only plugin built against ABI version 1: the headers beside it (sluice-v1/) are
 * version 1's, exactly as Sluice shipped them, so this library has version 1's layouts — no
 * `size` fields, no events. The host still loads it (docs/plugins.md, "Plugins built for an
 * older version"); Tests/SluicePluginsTests/ABIVersion1Tests runs both of its node types.
 *
 * `test-v1-gain` (a processor): out = (in × gain + bias) × (mode == "inverted" ? −1 : 1).
 * Four parameters of four types, so a host that read the entries with version 2's stride
 * would misread all but the first. A call of 0 frames, which version 1 never allowed,
 * returns SLUICE_PROCESS_ERROR (the host counts it as `plugin-errors`).
 *
 * `test-v1-pcm` (a provider): each utterance plays 100 × (its text's UTF-8 bytes) frames of
 * S16LE 16 kHz mono, frame n being (n × 37) mod 2000 − 1000, as the Swift test-pcm does.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice-v1/sluice.h"

_Static_assert(SLUICE_ABI_VERSION == 1, "this plugin is built against version 1's headers");

static void fail(sluice_error_t *error, const char *code, const char *message) {
    snprintf(error->code, sizeof error->code, "%s", code);
    snprintf(error->message, sizeof error->message, "%s", message);
}

/* MARK: test-v1-gain */

static const sluice_port_descriptor_t gain_inputs[] = {{"in", SLUICE_MEDIUM_FRAMES, "Float32 frames"}};
static const sluice_port_descriptor_t gain_outputs[] = {{"out", SLUICE_MEDIUM_FRAMES, "The frames, scaled"}};
static const char *const modes[] = {"plain", "inverted"};

static const sluice_param_descriptor_t gain_params[] = {
    {"gain", SLUICE_PARAM_NUMBER, 0, 4, NULL, 0, false, true, {1, 0, false, NULL}, NULL, "Linear gain."},
    {"bias", SLUICE_PARAM_NUMBER, -1, 1, NULL, 0, false, true, {0, 0, false, NULL}, "FS", "Added after the gain."},
    {"mode", SLUICE_PARAM_CHOICE, 0, 0, modes, 2, false, true, {0, 0, false, "plain"}, NULL, "inverted flips the sign."},
    {"label", SLUICE_PARAM_STRING, 0, 0, NULL, 0, true, false, {0, 0, false, NULL}, NULL, "Required, unused."},
};

static const sluice_node_descriptor_t gain_descriptor = {
    "test-v1-gain", SLUICE_NODE_PROCESSOR, "Scales and offsets frames (a version-1 test processor).",
    gain_inputs, 1, gain_outputs, 1, gain_params, 4,
};

typedef struct gain {
    double gain, bias, sign;
} gain_t;

static bool gain_activate(void *instance, uint32_t sample_rate, uint32_t max_frames, uint32_t channels,
                          sluice_error_t *error) {
    (void)instance, (void)sample_rate, (void)max_frames, (void)channels, (void)error;
    return true;
}

static sluice_process_status_t gain_process(void *instance, const sluice_process_t *process) {
    const gain_t *self = (const gain_t *)instance;
    if (process->frames == 0 || process->input_count != 1 || process->output_count != 1) return SLUICE_PROCESS_ERROR;
    const uint32_t samples = process->frames * process->channels;
    for (uint32_t i = 0; i < samples; i++) {
        process->outputs[0][i] = (float)(((double)process->inputs[0][i] * self->gain + self->bias) * self->sign);
    }
    return SLUICE_PROCESS_CONTINUE;
}

static void gain_reset(void *instance) { (void)instance; }
static void gain_deactivate(void *instance) { (void)instance; }
static void gain_destroy(void *instance) { free(instance); }

static const sluice_processor_vtable_t gain_vtable = {
    gain_activate, gain_process, gain_reset, gain_deactivate, gain_destroy,
};

/* MARK: test-v1-pcm */

static const sluice_port_descriptor_t pcm_outputs[] = {{"out", SLUICE_MEDIUM_BYTES, "S16LE 16000 Hz mono"}};

static const sluice_node_descriptor_t pcm_descriptor = {
    "test-v1-pcm", SLUICE_NODE_PROVIDER, "Serves known PCM per utterance (a version-1 test provider).",
    NULL, 0, pcm_outputs, 1, NULL, 0,
};

enum { PCM_MAX_UTTERANCES = 64 };

typedef struct pcm {
    pthread_mutex_t lock;
    /* Frames of each complete utterance, in order; `read_index` is the one being read. */
    uint32_t frames[PCM_MAX_UTTERANCES];
    uint32_t count, read_index;
    /* Text bytes of the utterance being built. */
    uint32_t pending;
    /* Bytes of utterance `read_index` already read. */
    uint32_t byte;
    bool text_ended, cancelled;
} pcm_t;

static bool pcm_get_format(void *instance, sluice_pcm_format_t *format) {
    (void)instance;
    format->sample_format = SLUICE_SAMPLE_S16LE;
    format->sample_rate = 16000;
    format->channels = 1;
    return true;
}

static bool pcm_begin(void *instance, sluice_error_t *error) {
    pcm_t *self = (pcm_t *)instance;
    (void)error;
    pthread_mutex_lock(&self->lock);
    self->pending = 0;
    pthread_mutex_unlock(&self->lock);
    return true;
}

static bool pcm_push(void *instance, const char *text, size_t length, sluice_error_t *error) {
    pcm_t *self = (pcm_t *)instance;
    (void)text, (void)error;
    pthread_mutex_lock(&self->lock);
    self->pending += (uint32_t)length;
    pthread_mutex_unlock(&self->lock);
    return true;
}

static bool pcm_end(void *instance, sluice_error_t *error) {
    pcm_t *self = (pcm_t *)instance;
    pthread_mutex_lock(&self->lock);
    const bool room = self->count < PCM_MAX_UTTERANCES;
    if (room) self->frames[self->count++] = 100 * self->pending;
    pthread_mutex_unlock(&self->lock);
    if (!room) fail(error, "too-many", "test-v1-pcm holds 64 utterances");
    return room;
}

static void pcm_end_text(void *instance) {
    pcm_t *self = (pcm_t *)instance;
    pthread_mutex_lock(&self->lock);
    self->text_ended = true;
    pthread_mutex_unlock(&self->lock);
}

static sluice_read_status_t pcm_read(void *instance, void *buffer, size_t capacity, size_t *written,
                                     sluice_error_t *error) {
    pcm_t *self = (pcm_t *)instance;
    (void)error;
    *written = 0;
    pthread_mutex_lock(&self->lock);
    sluice_read_status_t status;
    if (self->cancelled || (self->read_index == self->count && self->text_ended)) {
        status = SLUICE_READ_END;
    } else if (self->read_index == self->count) {
        status = SLUICE_READ_WOULD_BLOCK;
    } else if (self->byte == 2 * self->frames[self->read_index]) {
        self->read_index++;
        self->byte = 0;
        status = SLUICE_READ_UTTERANCE_END;
    } else {
        const uint32_t total = 2 * self->frames[self->read_index];
        size_t count = total - self->byte;
        if (count > capacity) count = capacity;
        unsigned char *bytes = (unsigned char *)buffer;
        for (size_t i = 0; i < count; i++) {
            const uint32_t at = self->byte + (uint32_t)i;
            const int sample = (int)((at / 2 * 37) % 2000) - 1000;
            const uint16_t bits = (uint16_t)(int16_t)sample;
            bytes[i] = (unsigned char)(at % 2 == 0 ? bits & 0xff : bits >> 8);
        }
        self->byte += (uint32_t)count;
        *written = count;
        status = SLUICE_READ_DATA;
    }
    pthread_mutex_unlock(&self->lock);
    return status;
}

static void pcm_cancel(void *instance) {
    pcm_t *self = (pcm_t *)instance;
    pthread_mutex_lock(&self->lock);
    self->cancelled = true;
    pthread_mutex_unlock(&self->lock);
}

static void pcm_destroy(void *instance) {
    pcm_t *self = (pcm_t *)instance;
    pthread_mutex_destroy(&self->lock);
    free(self);
}

static const sluice_provider_vtable_t pcm_vtable = {
    pcm_get_format, pcm_begin, pcm_push, pcm_end, pcm_end_text, pcm_read, pcm_cancel, pcm_destroy, NULL, NULL,
};

/* MARK: Factory and entry */

static uint32_t factory_count(const sluice_node_factory_t *factory) {
    (void)factory;
    return 2;
}

static const sluice_node_descriptor_t *factory_get_descriptor(const sluice_node_factory_t *factory, uint32_t index) {
    (void)factory;
    return index == 0 ? &gain_descriptor : index == 1 ? &pcm_descriptor : NULL;
}

static bool factory_create_provider(const sluice_node_factory_t *factory, const char *type_name,
                                    const sluice_param_value_t *params, uint32_t param_count,
                                    sluice_provider_t *provider, sluice_error_t *error) {
    (void)factory, (void)params, (void)param_count;
    if (strcmp(type_name, "test-v1-pcm") != 0) {
        fail(error, "unknown-type", "no such provider");
        return false;
    }
    pcm_t *self = (pcm_t *)calloc(1, sizeof *self);
    if (self == NULL) return false;
    pthread_mutex_init(&self->lock, NULL);
    provider->instance = self;
    provider->vtable = &pcm_vtable;
    return true;
}

static bool factory_create_processor(const sluice_node_factory_t *factory, const char *type_name,
                                     const sluice_param_value_t *params, uint32_t param_count,
                                     sluice_processor_t *processor, sluice_error_t *error) {
    (void)factory;
    if (strcmp(type_name, "test-v1-gain") != 0) {
        fail(error, "unknown-type", "no such processor");
        return false;
    }
    gain_t *self = (gain_t *)calloc(1, sizeof *self);
    if (self == NULL) return false;
    self->gain = 1, self->bias = 0, self->sign = 1;
    for (uint32_t i = 0; i < param_count; i++) {
        if (strcmp(params[i].name, "gain") == 0) self->gain = params[i].value.number;
        else if (strcmp(params[i].name, "bias") == 0) self->bias = params[i].value.number;
        else if (strcmp(params[i].name, "mode") == 0) self->sign = strcmp(params[i].value.string, "inverted") == 0 ? -1 : 1;
    }
    processor->instance = self;
    processor->vtable = &gain_vtable;
    return true;
}

static const sluice_node_factory_t factory = {
    factory_count, factory_get_descriptor, factory_create_provider, factory_create_processor,
};

static bool entry_init(const char *plugin_path) {
    (void)plugin_path;
    return true;
}

static void entry_deinit(void) {}

static const void *entry_get_factory(const char *factory_id) {
    return strcmp(factory_id, SLUICE_NODE_FACTORY_ID) == 0 ? &factory : NULL;
}

static const sluice_plugin_entry_t entry = {SLUICE_ABI_VERSION, entry_init, entry_deinit, entry_get_factory};

SLUICE_EXPORT const sluice_plugin_entry_t *sluice_plugin_entry(void) {
    return &entry;
}
