/*
 * The release build links espeak-ng statically (deploy/build-release). Debian's libespeak-ng.a calls pcaudiolib
 * for espeak-ng's own playback mode, which hound-speaker never uses: it asks espeak-ng for samples
 * (AUDIO_OUTPUT_SYNCHRONOUS) and plays them through its own ALSA path. Linking the real pcaudiolib would load
 * PulseAudio's client, D-Bus and X11 libraries into a headless speaker (about 1.7 MB resident, BENCHMARKS.md), so
 * these definitions take its place and make espeak-ng's playback mode fail the way it does in an espeak-ng built
 * without pcaudiolib: no audio device. The prototypes are pcaudiolib 1.2's (pcaudiolib/audio.h).
 */
#include <stddef.h>
#include <stdint.h>

struct audio_object;

struct audio_object *create_audio_device_object(const char *device, const char *application_name,
                                                const char *description) {
    (void)device; (void)application_name; (void)description;
    return NULL;
}

int audio_object_open(struct audio_object *object, int format, uint32_t rate, uint8_t channels) {
    (void)object; (void)format; (void)rate; (void)channels;
    return -1;
}

void audio_object_close(struct audio_object *object) { (void)object; }

void audio_object_destroy(struct audio_object *object) { (void)object; }

int audio_object_write(struct audio_object *object, const void *data, size_t bytes) {
    (void)object; (void)data; (void)bytes;
    return -1;
}

int audio_object_drain(struct audio_object *object) { (void)object; return -1; }

int audio_object_flush(struct audio_object *object) { (void)object; return -1; }

const char *audio_object_strerror(struct audio_object *object, int error) {
    (void)object; (void)error;
    return "hound-speaker's espeak-ng has no audio output of its own";
}
