/*
 * The entry: the one symbol a plugin exports.
 *
 * A plugin is a shared library exporting a function named `sluice_plugin_entry` (see
 * SLUICE_PLUGIN_ENTRY_SYMBOL) that returns a pointer to a `sluice_plugin_entry_t`. It is a
 * function rather than data so that a plugin written in Swift can export it with `@c`; it
 * must do nothing but return the pointer.
 *
 * The host reads `abi_version` before anything else and refuses a plugin whose version is
 * not its own without calling any of its functions. Then: `init` once → `get_factory` and
 * the factory's functions → every instance destroyed → `deinit` once. A host may call `init`
 * again after `deinit` (when it loads the plugin again).
 */
#ifndef SLUICE_ENTRY_H
#define SLUICE_ENTRY_H

#include "common.h"

SLUICE_EXTERN_C_BEGIN

#define SLUICE_PLUGIN_ENTRY_SYMBOL "sluice_plugin_entry"

typedef struct sluice_plugin_entry {
    /* SLUICE_ABI_VERSION as the plugin was built. Always the first field, in every version. */
    uint32_t abi_version;

    /* [control-thread] Called once, after the library is loaded and its version checked,
     * before any other function. `plugin_path` is the library's absolute path, valid only
     * during the call (copy it to keep it). Returns false when the plugin cannot work (a
     * resource missing); the host then reports the plugin as failed and calls nothing else,
     * not even `deinit`. */
    bool (*init)(const char *plugin_path);

    /* [control-thread] Called once, after every instance the plugin created was destroyed.
     * Pointers the plugin returned (factories, descriptors) are not used afterwards. */
    void (*deinit)(void);

    /* [control-thread] The factory with this id (SLUICE_NODE_FACTORY_ID, factory.h), or NULL
     * when the plugin has none, so a host asking for a later revision learns it is
     * unsupported. The pointer is owned by the plugin and valid until `deinit`. */
    const void *(*get_factory)(const char *factory_id);
} sluice_plugin_entry_t;

/* The type of the exported function. */
typedef const sluice_plugin_entry_t *(*sluice_plugin_entry_function_t)(void);

/* [control-thread] The exported function itself: returns a pointer owned by the plugin,
 * valid while the library is loaded. Define it once per plugin, with SLUICE_EXPORT. */
SLUICE_EXPORT const sluice_plugin_entry_t *sluice_plugin_entry(void);

SLUICE_EXTERN_C_END

#endif /* SLUICE_ENTRY_H */
