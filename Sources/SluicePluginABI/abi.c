// The ABI's layout, pinned: these assertions fail the build if a field moves on this
// platform. The headers' C and C++ compile test lives in Tests/SluicePluginABITests.
#include "sluice/sluice.h"

_Static_assert(offsetof(sluice_plugin_entry_t, abi_version) == 0, "the version is the entry's first field");
_Static_assert(sizeof(sluice_error_t) == 512, "sluice_error_t is 512 bytes");
_Static_assert(sizeof(sluice_pcm_format_t) == 12, "sluice_pcm_format_t is three uint32_t");
_Static_assert(sizeof(sluice_value_t) == 32, "sluice_value_t layout");
_Static_assert(offsetof(sluice_process_t, frames) == 8, "sluice_process_t layout");

// Version 1's structs are the part before `size` (common.h, "Growing the ABI"): the host reads
// a version-1 plugin's struct up to these offsets, which are version 1's sizes (LP64; the
// node descriptor's `size` sits in what was version 1's tail padding). SluicePluginABITests
// compiles the version-1 headers kept in Tests/Fixtures/Plugins/abi-v1 and checks them field by field.
_Static_assert(offsetof(sluice_param_descriptor_t, size) == 96, "version 1's sluice_param_descriptor_t was 96 bytes");
_Static_assert(offsetof(sluice_node_descriptor_t, size) == 68, "version 1's sluice_node_descriptor_t ended at 68");
_Static_assert(offsetof(sluice_process_t, size) == 40, "version 1's sluice_process_t was 40 bytes");
_Static_assert(offsetof(sluice_processor_vtable_t, size) == 40, "version 1's processor vtable was 5 pointers");
_Static_assert(offsetof(sluice_provider_vtable_t, size) == 80, "version 1's provider vtable was 10 pointers");
_Static_assert(sizeof(sluice_event_header_t) == 16, "sluice_event_header_t is four uint32_t");
_Static_assert(offsetof(sluice_param_event_t, param_name) == 32, "sluice_param_event_t was 32 bytes before param_name");
_Static_assert(sizeof(sluice_param_event_t) == 40, "sluice_param_event_t layout");
_Static_assert(sizeof(sluice_marker_event_t) == 40, "sluice_marker_event_t layout");
