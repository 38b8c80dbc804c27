#include "hs_alsa.h"
#include <alsa/asoundlib.h>

static void hs_alsa_discard(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

void hs_alsa_quiet(void) { snd_lib_error_set_handler(hs_alsa_discard); }
