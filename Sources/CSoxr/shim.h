#pragma once
#include <soxr.h>
