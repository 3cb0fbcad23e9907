// Shim over libsamplerate for Swift: its API is plain C and needs no wrappers.
#ifndef SLUICE_CSAMPLERATE_SHIM_H
#define SLUICE_CSAMPLERATE_SHIM_H
#include <samplerate.h>
#endif
