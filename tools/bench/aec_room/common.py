"""What the room set's modules share: the paths, levels and timings of the set, the error a bad input or a
missing prerequisite raises, WAV input and output, the external programs, the random streams."""

import glob
import importlib.util
import os
import shutil
import subprocess
import wave

import numpy as np


SR = 16000
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
# The ring played; --ring replaces it for the run (__main__), so the modules read it as common.TIMER_WAV.
TIMER_WAV = os.path.join(REPO, "share", "earcons", "timer.wav")
# The real-keyword recordings are read where they are (their README: read them from ../shared/data/ at run time,
# do not copy them into the project).
REAL_DIR = os.path.abspath(os.path.join(REPO, "..", "shared", "data", "real-keywords", "view-glass"))
# what the real clips say (labels): --real-dir and --real-text change both, e.g. to real "stop" clips (issue #61)
REAL_TEXT = "view glass"
# what the answers say: "templates" (answers.py's weather, recipes, facts) or "sentences" (--answer-texts)
ANSWER_TEXTS = "templates"

ESRS_DB = (0, 5, 10, 15, 20)
BULK_DELAY_SAMPLES = 128  # 8 ms: the converters' latency, added to the echo path
ANSWER_DBFS = -20.0  # the spoken answers' RMS over their active frames, as played (ref.wav)
ECHO_DBFS = -26.0  # the echo's speech level at the microphone: the gain per room is set for it
NOISE_BELOW_ECHO_DB = 40.0
NOISE_DBFS = ECHO_DBFS - NOISE_BELOW_ECHO_DB
SPEED_OF_SOUND = 343.0
MIN_ECHO_IN_SPAN_DB = -10.0  # a phrase's span must hold echo within this of the playback's usual level
MAX_NUDGE_S = 8  # how far a phrase may be moved later to find it (else the set is not made)
SPACING_S = (6.0, 8.0)  # one phrase every 6-8 s (onset to onset)
FIRST_PHRASE_S = (3.0, 4.0)
OWN_FILE_SECONDS = 600
OWN_RING_FRACTION = 0.10
ECHO_ONLY_SECONDS = 60
INT16_MAX = 32767


QUICK = {"rooms": ["rt0.2", "rt0.8"], "esrs": (0, 20), "phrases": 3, "real_clips": 3, "echo_only_s": 8,
         "own_file_s": 20}


class Fail(Exception):
    pass


# --- small helpers ------------------------------------------------------------------------------------------------
def db(x):
    return 20 * np.log10(max(float(x), 1e-12))


def rms(x):
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if len(x) else 0.0


def frames_db(x, frame=SR // 100):
    n = len(x) // frame
    if n == 0:
        return np.zeros(0)
    e = np.mean(np.square(x[: n * frame].reshape(n, frame), dtype=np.float64), axis=1)
    return 10 * np.log10(e + 1e-20)


def active_span(x, frame=SR // 100):
    """(first, last+1) sample of the 10 ms frames above max(loudest - 35 dB, 10th percentile + 12 dB)."""
    f = frames_db(x, frame)
    if len(f) == 0:
        return 0, len(x)
    thr = max(f.max() - 35.0, np.percentile(f, 10) + 12.0)
    on = np.nonzero(f > thr)[0]
    return int(on[0] * frame), int((on[-1] + 1) * frame)


def active_rms(x, below_db=35.0):
    """RMS over the 10 ms frames within below_db of the loudest one."""
    f = frames_db(x)
    if len(f) == 0:
        return rms(x)
    return float(np.sqrt(np.mean(10 ** (f[f > f.max() - below_db] / 10))))


def to_int16(x):
    return np.clip(np.round(np.asarray(x, np.float64) * INT16_MAX), -INT16_MAX - 1, INT16_MAX).astype(np.int16)


class WavWriter:
    """16 kHz mono 16-bit WAV, written block by block."""

    def __init__(self, path):
        self.w = wave.open(path, "wb")
        self.w.setnchannels(1)
        self.w.setsampwidth(2)
        self.w.setframerate(SR)
        self.clipped = 0

    def write(self, x):
        self.clipped += int(np.sum(np.abs(x) * INT16_MAX > INT16_MAX + 0.5))
        self.w.writeframes(to_int16(x).tobytes())

    def close(self):
        self.w.close()


def write_wav(path, x):
    w = WavWriter(path)
    w.write(x)
    w.close()
    return w.clipped


def write_float_wav(path, x):
    from scipy.io import wavfile
    wavfile.write(path, SR, np.asarray(x, np.float32))


def read_wav(path, want_rate=SR):
    """float64 samples of a 16-bit PCM WAV (mono or mixed down), with its rate checked."""
    if not os.path.exists(path):
        raise Fail(f"missing file: {path}")
    with wave.open(path) as w:
        rate, ch, width, n = w.getframerate(), w.getnchannels(), w.getsampwidth(), w.getnframes()
        if width != 2:
            raise Fail(f"{path}: {8 * width}-bit, expected 16-bit PCM")
        x = np.frombuffer(w.readframes(n), np.int16).astype(np.float64) / 32768.0
    if ch > 1:
        x = x.reshape(-1, ch).mean(axis=1)
    if want_rate is not None and rate != want_rate:
        raise Fail(f"{path}: {rate} Hz, expected {want_rate} Hz")
    return x, rate


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise Fail(f"{what} failed ({' '.join(cmd[:3])} ...): {r.stderr.strip()[:400]}")


def sox_to_16k(src, dst):
    # -D: no dither (sox dithers with a random seed by default, which made each run's files differ)
    run(["sox", "-D", src, "-r", str(SR), "-c", "1", "-b", "16", "-e", "signed-integer", dst, "rate", "-v"], "sox")


def rng_for(seed, *what):
    """An independent random stream per purpose: the same purpose gives the same numbers whatever else runs."""
    key = [int(seed)] + [int.from_bytes(str(w).encode(), "little") % (2 ** 63) for w in what]
    return np.random.default_rng(np.random.SeedSequence(key))


def prerequisites(fallback_rirs):
    missing = [t for t in ("espeak-ng", "sox", "flite", "festival") if shutil.which(t) is None]
    if missing:
        raise Fail("missing tool(s): " + ", ".join(missing) + " (apt-get install espeak-ng sox flite festival "
                   "festvox-kdlpc16k)")
    # the held-out voices of flite and festival (tools/hotphrase/hotphrase/synth.py)
    if "rms" not in subprocess.run(["flite", "-lv"], capture_output=True, text=True).stdout.split():
        raise Fail("flite has no voice rms (held out from the hot-phrase training)")
    if not glob.glob("/usr/share/festival/voices/*/ked_diphone"):
        raise Fail("festival has no voice ked_diphone (apt-get install festvox-kdlpc16k)")
    for path in (TIMER_WAV, REAL_DIR):
        if not os.path.exists(path):
            raise Fail(f"missing: {path}")
    # the held-out voices come from the hot-phrase tools' own code (nearend.heldout_phrases)
    if importlib.util.find_spec("hotphrase") is None:
        raise Fail("missing Python package hotphrase (the hot-phrase tools): pip install --no-deps -e tools/hotphrase "
                   "into this venv (tools/bench/README.md)")
    for mod in ("numpy", "scipy") + (() if fallback_rirs else ("pyroomacoustics",)):
        try:
            __import__(mod)
        except ImportError:
            raise Fail(f"missing Python package {mod}: pip install -r tools/bench/aec_room_requirements.txt "
                       "(tools/bench/README.md)" + ("" if mod != "pyroomacoustics" else
                                                                  ", or run with --fallback-rirs"))
