#pragma once
#include "hs_curl.h"
#include "hs_alsa.h"
#include "hs_clock.h"
#include "hs_malloc.h"
#include "hs_spawn.h"
