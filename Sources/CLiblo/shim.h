// liblo, the OSC library of JACK applications (Ardour, Carla, non-mixer).
#pragma once
#include <lo/lo.h>

// lo_send_message_from is not variadic; lo_send_from is. Replies are built as lo_message
// values (lo_message_add_*), so nothing variadic is called from Swift.
