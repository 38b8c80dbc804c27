"""A noise-suppressing front end ahead of the hot-phrase embedding (issue #37, part 2, session 6): libspeexdsp's
preprocessor, the system library the speaker already links (Sources/Audio/EchoCanceller.swift runs the same
preprocessor for its residual echo), called through ctypes.

  Denoiser(noise_suppress_db=-15, frame=160)(int16 samples) -> int16 samples, the same length

As the speaker would run it: one preprocessor state per stream (a take, a clip, a test-side stream), fed its
frames in order from the start so that its noise estimate adapts as it does on the device; DENOISE on at
NOISE_SUPPRESS dB (speexdsp's default -15 unless given), AGC and DEREVERB off (the hot phrase was trained on plain
audio, as EchoCanceller.swift keeps them off; its VAD is off by default and, like Swift, left alone: setting it
only prints speexdsp's warning). A last partial frame is padded with zeros and cut back.

On the command lines it is `--frontend speex-denoise[:DB]` (frontends.py registers it with the product's
hotphrase.frontend_registry, beside gtcrn, gate and wpe). (speexdsp's own DEREVERB is no alternative: its
preprocess.c leaves the reverberation estimate at zero and ignores DEREVERB_LEVEL and DEREVERB_DECAY, "until
de-reverberation is actually enabled again".)
"""
import ctypes
import ctypes.util

import numpy as np

from hotphrase.errors import HotPhraseError

# speex/speex_preprocess.h
SET_DENOISE = 0
SET_AGC = 2
SET_DEREVERB = 8
SET_NOISE_SUPPRESS = 18
GET_NOISE_SUPPRESS = 19

LIBRARY = "libspeexdsp.so.1"  # Debian's libspeexdsp1
DEFAULT_DB = -15  # speexdsp's own default NOISE_SUPPRESS (and EchoCancelSettings.noiseSuppressDB)
SAMPLE_RATE = 16000

_lib = {}


def load(name=LIBRARY):
    """The preprocessor's functions from the shared library `name` (a clear error when it is not there)."""
    if name in _lib:
        return _lib[name]
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        found = ctypes.util.find_library("speexdsp")
        hint = f" (ctypes finds {found})" if found else " (install libspeexdsp1: apt-get install libspeexdsp1)"
        raise HotPhraseError(name, f"cannot load libspeexdsp: {e}{hint}") from None
    try:
        lib.speex_preprocess_state_init.restype = ctypes.c_void_p
        lib.speex_preprocess_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.speex_preprocess_state_destroy.restype = None
        lib.speex_preprocess_state_destroy.argtypes = [ctypes.c_void_p]
        lib.speex_preprocess_run.restype = ctypes.c_int
        lib.speex_preprocess_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int16)]
        lib.speex_preprocess_ctl.restype = ctypes.c_int
        lib.speex_preprocess_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    except AttributeError as e:
        raise HotPhraseError(name, f"not libspeexdsp (no preprocessor: {e})") from None
    _lib[name] = lib
    return lib


class Denoiser:
    """speexdsp's preprocessor with DENOISE only; each call runs a fresh state over one stream from its start."""

    def __init__(self, noise_suppress_db=DEFAULT_DB, frame=160, library=LIBRARY):
        if frame not in (160, 320):
            raise HotPhraseError(f"frame {frame}", "the speaker's speexdsp frames are 160 or 320 samples (10 or 20 ms)")
        if noise_suppress_db > 0:
            raise HotPhraseError(f"{noise_suppress_db} dB", "NOISE_SUPPRESS is an attenuation: 0 dB or below")
        self.db = int(noise_suppress_db)
        self.frame = frame
        self.lib = load(library)

    def _state(self):
        lib = self.lib
        st = lib.speex_preprocess_state_init(self.frame, SAMPLE_RATE)
        if not st:
            raise HotPhraseError("speex_preprocess_state_init", "returned NULL")
        for req, v in ((SET_DENOISE, 1), (SET_AGC, 0), (SET_DEREVERB, 0), (SET_NOISE_SUPPRESS, self.db)):
            x = ctypes.c_int32(v)
            lib.speex_preprocess_ctl(st, req, ctypes.byref(x))
        got = ctypes.c_int32(0)
        lib.speex_preprocess_ctl(st, GET_NOISE_SUPPRESS, ctypes.byref(got))
        if got.value != self.db:
            lib.speex_preprocess_state_destroy(st)
            raise HotPhraseError("speex_preprocess_ctl", f"NOISE_SUPPRESS reads back {got.value}, not {self.db}")
        return st

    def __call__(self, samples):
        x = np.asarray(samples)
        if x.dtype != np.int16:
            raise HotPhraseError(f"samples of {x.dtype}", "the preprocessor takes int16 samples")
        n = len(x)
        if n == 0:
            return x.copy()
        padded = np.zeros(-(-n // self.frame) * self.frame, np.int16)
        padded[:n] = x
        buf = np.ascontiguousarray(padded)
        ptr = buf.ctypes.data_as(ctypes.POINTER(ctypes.c_int16))
        st = self._state()
        try:
            step = ctypes.sizeof(ctypes.c_int16) * self.frame
            base = ctypes.cast(ptr, ctypes.c_void_p).value
            for k in range(len(buf) // self.frame):  # in order: the noise estimate adapts frame by frame
                self.lib.speex_preprocess_run(st, ctypes.cast(base + k * step, ctypes.POINTER(ctypes.c_int16)))
        finally:
            self.lib.speex_preprocess_state_destroy(st)
        return buf[:n].copy()
