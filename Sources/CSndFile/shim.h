// libsndfile's types and constants for Swift. Nothing links it: SluiceNodes opens it on
// first use (LibSndFile.swift), and the tests that call it directly link it themselves.
#ifndef SLUICE_CSNDFILE_SHIM_H
#define SLUICE_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
