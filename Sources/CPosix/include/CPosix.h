#pragma once
// The C library calls Swift's Glibc module does not import, with no library beyond libc (Platform's; CShims
// keeps the libcurl and ALSA shims).
#include "hs_clock.h"
#include "hs_malloc.h"
#include "hs_spawn.h"
#include "hs_spi.h"
