// Test-only plugin: a real entry that reports a future ABI version. The host must refuse it
// after reading the version, before calling anything: `init` aborts to prove it is not called.
#include <stdlib.h>

#include <sluice/sluice.h>

static bool entry_init(const char *plugin_path) {
    (void)plugin_path;
    abort();
}

static void entry_deinit(void) { abort(); }

static const void *entry_get_factory(const char *factory_id) {
    (void)factory_id;
    abort();
}

static const sluice_plugin_entry_t entry = {
    SLUICE_ABI_VERSION + 1, entry_init, entry_deinit, entry_get_factory,
};

SLUICE_EXPORT const sluice_plugin_entry_t *sluice_plugin_entry(void) {
    return &entry;
}
