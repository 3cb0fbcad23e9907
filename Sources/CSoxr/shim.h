// Shim over libsoxr for Swift: its API is plain C and needs no wrappers.
#ifndef SLUICE_CSOXR_SHIM_H
#define SLUICE_CSOXR_SHIM_H
#include <soxr.h>
#endif
