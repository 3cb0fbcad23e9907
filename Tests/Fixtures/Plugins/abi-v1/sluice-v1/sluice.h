/*
 * The Sluice plugin ABI, every header. Plugins include this one.
 *
 *   common.h      ABI version, export macro, thread tags, errors, PCM formats
 *   entry.h       the exported entry: version, init, deinit, factory lookup
 *   descriptor.h  node descriptors: kind, ports, parameters as data
 *   factory.h     the node factory: list types, create instances
 *   provider.h    the provider vtable: text in, PCM bytes out
 *   processor.h   the processor vtable: activate, process, reset, deactivate, destroy
 *
 * docs/plugins.md walks through writing a plugin in C and in Swift.
 */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

#include "common.h"
#include "descriptor.h"
#include "entry.h"
#include "factory.h"
#include "processor.h"
#include "provider.h"

#endif /* SLUICE_SLUICE_H */
