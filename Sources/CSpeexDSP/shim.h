// Shim over speexdsp's resampler for Swift: its API is plain C and needs no wrappers.
#ifndef SLUICE_CSPEEXDSP_SHIM_H
#define SLUICE_CSPEEXDSP_SHIM_H
#include <speex/speex_resampler.h>
#endif
