// Shim over libsndfile for Swift: its API is plain C and needs no wrappers.
#ifndef SLUICE_CSNDFILE_SHIM_H
#define SLUICE_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
