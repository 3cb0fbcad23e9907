/*
 * The node factory: lists the node types a plugin provides and creates instances of them.
 * Found with `entry->get_factory(SLUICE_NODE_FACTORY_ID)`.
 */
#ifndef SLUICE_FACTORY_H
#define SLUICE_FACTORY_H

#include "common.h"
#include "descriptor.h"
#include "processor.h"
#include "provider.h"

SLUICE_EXTERN_C_BEGIN

/* The id and revision of this factory. A later, incompatible factory gets a new id. */
#define SLUICE_NODE_FACTORY_ID "sluice.node-factory/1"

typedef struct sluice_node_factory {
    /* [control-thread] How many node types the plugin provides. */
    uint32_t (*count)(const struct sluice_node_factory *factory);

    /* [control-thread] The descriptor at `index` (0 … count − 1), owned by the plugin and
     * valid until `deinit`; NULL for an index out of range. */
    const sluice_node_descriptor_t *(*get_descriptor)(const struct sluice_node_factory *factory,
                                                       uint32_t index);

    /* [control-thread] Creates a provider of type `type_name` (a SLUICE_NODE_PROVIDER
     * descriptor's name) and fills in `*provider`. `params` holds `param_count` values, owned
     * by the host and valid only during the call: every parameter the graph gave or that has
     * a default, in the descriptor's order, already checked against its type and range.
     * Returns false and fills `error` when it cannot (a voice that does not exist, a key
     * missing); the host reports the message at the node in the graph file. */
    bool (*create_provider)(const struct sluice_node_factory *factory, const char *type_name,
                            const sluice_param_value_t *params, uint32_t param_count,
                            sluice_provider_t *provider, sluice_error_t *error);

    /* [control-thread] The same for a SLUICE_NODE_PROCESSOR type; the instance starts
     * inactive. */
    bool (*create_processor)(const struct sluice_node_factory *factory, const char *type_name,
                             const sluice_param_value_t *params, uint32_t param_count,
                             sluice_processor_t *processor, sluice_error_t *error);
} sluice_node_factory_t;

SLUICE_EXTERN_C_END

#endif /* SLUICE_FACTORY_H */
