// The ABI's layout, pinned: these assertions fail the build if a field moves on this
// platform. The headers' C and C++ compile test lives in Tests/SluicePluginABITests.
#include "sluice/sluice.h"

_Static_assert(offsetof(sluice_plugin_entry_t, abi_version) == 0, "the version is the entry's first field");
_Static_assert(sizeof(sluice_error_t) == 512, "sluice_error_t is 512 bytes");
_Static_assert(sizeof(sluice_pcm_format_t) == 12, "sluice_pcm_format_t is three uint32_t");
_Static_assert(sizeof(sluice_value_t) == 32, "sluice_value_t layout");
_Static_assert(offsetof(sluice_process_t, frames) == 8, "sluice_process_t layout");
