#ifndef BLEKIT_CGLIB_SHIM_H
#define BLEKIT_CGLIB_SHIM_H
#include <glib.h>
#include <glib-unix.h>
#endif
