// The LADSPA plugin API (ladspa-sdk's header): plain C, nothing to wrap. Nothing is linked:
// each plugin library is opened with dlopen.
#ifndef SLUICE_CLADSPA_SHIM_H
#define SLUICE_CLADSPA_SHIM_H
#include <ladspa.h>
#endif
