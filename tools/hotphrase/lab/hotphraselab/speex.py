"""A noise-suppressing front end ahead of the hot-phrase embedding (issue #37, part 2, session 6): libspeexdsp's
preprocessor, the system library the speaker already links (Sources/Audio/EchoCanceller.swift runs the same
preprocessor for its residual echo), called through ctypes.

  Denoiser(noise_suppress_db=-15, frame=160)(int16 samples) -> int16 samples, the same length

As the speaker would run it: one preprocessor state per stream (a take, a clip, a test-side stream), fed its
frames in order from the start so that its noise estimate adapts as it does on the device; DENOISE on at
NOISE_SUPPRESS dB (speexdsp's default -15 unless given), AGC and DEREVERB off (the hot phrase was trained on plain
audio, as EchoCanceller.swift keeps them off; its VAD is off by default and, like Swift, left alone: setting it
only prints speexdsp's warning). A last partial frame is padded with zeros and cut back.

The front end's name, as the command lines and cache keys spell it: "none" or "speex-denoise[:DB]" (parse_frontend),
or "gtcrn:ONNX_PATH", a neural enhancer (gtcrn.py; issue #37, part 2, session 9b), "gate:WEIGHTS_NPZ", our own
dominant-talker gate (talker_gate.py; session 10), or "wpe", WPE dereverberation (wpe.py; session 12), that make()
returns in its place. (speexdsp's own DEREVERB is no alternative: its preprocess.c leaves the reverberation estimate
at zero and ignores DEREVERB_LEVEL and DEREVERB_DECAY, "until de-reverberation is actually enabled again".)
"""
import ctypes
import ctypes.util
import os

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


# The front ends that are a model file: their name before the colon, the file's placeholder, and what it is.
MODEL_FRONTENDS = {"gtcrn": ("ONNX_PATH", "GTCRN model file (its streaming ONNX export)"),
                   "gate": ("WEIGHTS_NPZ", "talker-gate weights file (talker_gate_train's .npz)")}


def parse_frontend(spec):
    """"none" -> None; "speex-denoise" or "speex-denoise:DB" (DB <= 0, e.g. -15) -> the canonical name with its dB;
    "gtcrn:ONNX_PATH" (gtcrn.py) or "gate:WEIGHTS_NPZ" (talker_gate.py), the file must exist -> the name, a colon
    and the file's absolute path.
    The canonical name is what caches and reports are keyed by, so that embeddings made through different front
    ends never mix."""
    if spec in (None, "", "none"):
        return None
    head, sep, db = spec.partition(":")
    if head in MODEL_FRONTENDS:
        placeholder, what = MODEL_FRONTENDS[head]
        if not db:
            raise HotPhraseError(spec, f"want {head}:{placeholder} (the {what})")
        if not os.path.isfile(db):
            raise HotPhraseError(spec, f"no {what} at {db}")
        return head + ":" + os.path.abspath(db)
    if head == "wpe" and not sep:
        return "wpe"
    if head != "speex-denoise":
        raise HotPhraseError(spec, "unknown front end: want none, speex-denoise[:DB], gtcrn:ONNX_PATH, "
                                   "gate:WEIGHTS_NPZ or wpe")
    try:
        v = int(db) if sep else DEFAULT_DB
    except ValueError:
        raise HotPhraseError(spec, f"'{db}' is not a whole number of dB (e.g. speex-denoise:-15)") from None
    if v > 0:
        raise HotPhraseError(spec, "NOISE_SUPPRESS is an attenuation: 0 dB or below")
    return f"speex-denoise:{v}"


def make(spec):
    """The front end as a function int16 -> int16 (None for "none")."""
    name = parse_frontend(spec)
    if name is None:
        return None
    if name.startswith("gtcrn:"):
        from .gtcrn import Enhancer
        return Enhancer(name.partition(":")[2])
    if name.startswith("gate:"):
        from .talker_gate import Gate
        return Gate(name.partition(":")[2])
    if name == "wpe":
        from .wpe import Dereverb
        return Dereverb()
    return Denoiser(int(name.split(":")[1]))


def tag(spec):
    """The front end in a file name: "" for none, "-speex-denoise-15" for speex-denoise:-15, "-gtcrn-" and the
    model file's first 10 hex digits of SHA-256 for gtcrn:PATH, "-gate-" and the same for gate:PATH (a path does
    not fit a file name; the contents name the model)."""
    name = parse_frontend(spec)
    if name is None:
        return ""
    head, _, path = name.partition(":")
    if head in MODEL_FRONTENDS:
        from .gtcrn import file_digest
        return f"-{head}-" + file_digest(path)[:10]
    return "-" + name.replace(":", "")


def apply_float(fe, x):
    """A front end over float samples on [-1, 1) (the evaluation's renderings): through int16 and back."""
    if fe is None:
        return np.asarray(x, np.float32)
    q = np.clip(np.round(np.asarray(x, np.float64) * 32768), -32768, 32767).astype(np.int16)
    return (fe(q).astype(np.float32) / 32768.0)
