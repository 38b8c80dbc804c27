#pragma once
#include <speex/speex.h>
#include <speex/speex_header.h>
