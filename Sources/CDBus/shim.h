#ifndef BLEKIT_CDBUS_SHIM_H
#define BLEKIT_CDBUS_SHIM_H
#include <dbus/dbus.h>
#endif
