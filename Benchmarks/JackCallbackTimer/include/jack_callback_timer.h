/* An LD_PRELOAD library: see jack_callback_timer.c. Nothing to call. */
#ifndef SLUICE_JACK_CALLBACK_TIMER_H
#define SLUICE_JACK_CALLBACK_TIMER_H
#endif
