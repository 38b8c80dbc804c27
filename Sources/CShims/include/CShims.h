#pragma once
#include "hs_curl.h"
#include "hs_alsa.h"
