// Shim over libebur128 (EBU R128 loudness, true peak) for Swift: plain C, nothing to wrap.
#ifndef SLUICE_CEBUR128_SHIM_H
#define SLUICE_CEBUR128_SHIM_H
#include <ebur128.h>
#endif
