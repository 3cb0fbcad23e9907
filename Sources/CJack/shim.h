// Shim over libjack for Swift, and what Sluice's JACK callback needs from C. Swift cannot
// call C variadic functions, so the few that Sluice needs get fixed-argument wrappers here;
// nor has it a prefetch, which the callback issues for the memory a period reads.
#ifndef SLUICE_CJACK_SHIM_H
#define SLUICE_CJACK_SHIM_H

#include <jack/jack.h>
#include <jack/ringbuffer.h>
#include <stddef.h>

/// `jack_client_open` with the server name as a plain argument.
/// A NULL `server_name` follows JACK's own convention ($JACK_DEFAULT_SERVER, then "default").
static inline jack_client_t *sluice_jack_client_open(const char *client_name,
                                                     jack_options_t options,
                                                     jack_status_t *status,
                                                     const char *server_name) {
    if (server_name != NULL) {
        return jack_client_open(client_name, (jack_options_t)(options | JackServerName),
                                status, server_name);
    }
    return jack_client_open(client_name, options, status);
}

/// A hint that `address` will be read soon: the cache line is fetched without waiting for it.
static inline void sluice_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
