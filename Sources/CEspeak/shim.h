// Shim over libespeak-ng (the espeak provider plugin, Plugins/espeak, includes the header
// itself; this target brings pkg-config's flags and the apt hint). Plain C: no wrappers.
#ifndef SLUICE_CESPEAK_SHIM_H
#define SLUICE_CESPEAK_SHIM_H
#include <espeak-ng/speak_lib.h>
#endif
