#pragma once
// speexdsp (Debian's libspeexdsp-dev): the acoustic echo canceller, its preprocessor's residual echo suppression,
// and the resampler that brings the speaker's output to the microphone's 16 kHz for the canceller's reference.
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>
#include <speex/speex_resampler.h>
