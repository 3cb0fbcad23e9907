// lilv (LV2 discovery, presets, state) and the LV2 headers the `lv2` node hosts plugins with,
// plus the one thing Swift cannot write: the log feature's printf, which is variadic.
#ifndef SLUICE_CLILV_SHIM_H
#define SLUICE_CLILV_SHIM_H

#include <stdarg.h>
#include <stdio.h>

#include <lilv/lilv.h>
#include <lv2/atom/atom.h>
#include <lv2/buf-size/buf-size.h>
#include <lv2/core/lv2.h>
#include <lv2/log/log.h>
#include <lv2/options/options.h>
#include <lv2/port-props/port-props.h>
#include <lv2/presets/presets.h>
#include <lv2/resize-port/resize-port.h>
#include <lv2/state/state.h>
#include <lv2/urid/urid.h>
#include <lv2/worker/worker.h>

/// Where a plugin's log lines go: `sink` is given each formatted line (at most 511 bytes,
/// truncated beyond), with `context`. Formatting happens on the caller's thread, into the
/// stack: no allocation.
typedef void (*sluice_lv2_log_sink)(void *context, LV2_URID type, const char *line, int length);

typedef struct {
    sluice_lv2_log_sink sink;
    void *context;
} sluice_lv2_log_target;

static inline int sluice_lv2_log_vprintf(LV2_Log_Handle handle, LV2_URID type, const char *format, va_list arguments) {
    const sluice_lv2_log_target *target = (const sluice_lv2_log_target *)handle;
    char line[512];
    int length = vsnprintf(line, sizeof line, format, arguments);
    if (length < 0) return 0;
    if (length >= (int)sizeof line) length = (int)sizeof line - 1;
    target->sink(target->context, type, line, length);
    return length;
}

static inline int sluice_lv2_log_printf(LV2_Log_Handle handle, LV2_URID type, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int length = sluice_lv2_log_vprintf(handle, type, format, arguments);
    va_end(arguments);
    return length;
}

/// Fills a log feature whose lines go to `target`.
static inline void sluice_lv2_log_init(LV2_Log_Log *log, sluice_lv2_log_target *target) {
    log->handle = target;
    log->printf = sluice_lv2_log_printf;
    log->vprintf = sluice_lv2_log_vprintf;
}

#endif
