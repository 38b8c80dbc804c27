"""Noises, music, babble, room echo and mixing, all generated here so the pipeline needs no downloads.

Training and evaluation use different noise families: the evaluation's fan, street, plucked music and babble
from held-out voices are never heard in training (white, pink, brown, hum, chord music, training-voice babble).
"""
import subprocess

import numpy as np
from scipy.signal import fftconvolve, lfilter, butter, resample_poly

from .constants import INT16_MAX, INT16_SCALE
from .constants import SAMPLE_RATE as SR

POWER_FRAME = SR // 100  # 10 ms frames for a clip's active power


def _norm(x):
    return (x / (np.sqrt(np.mean(x ** 2)) + 1e-9) * 0.1).astype(np.float32)


def colored(rng, n, kind):
    w = rng.standard_normal(n)
    if kind == "white":
        return _norm(w)
    if kind == "pink":  # Paul Kellet's economy filter
        b = [0.049922035, -0.095993537, 0.050612699, -0.004408786]
        a = [1, -2.494956002, 2.017265875, -0.522189400]
        return _norm(lfilter(b, a, w))
    if kind == "brown":
        return _norm(lfilter([1.0], [1.0, -0.995], w))
    raise ValueError(kind)


def hum(rng, n):
    t = np.arange(n) / SR
    f = rng.choice([50.0, 60.0])
    x = sum(rng.uniform(0.2, 1.0) / k * np.sin(2 * np.pi * f * k * t + rng.uniform(0, 6)) for k in range(1, 8))
    return _norm(x + 0.05 * colored(rng, n, "pink"))


def fan(rng, n):
    b, a = butter(2, [80 / (SR / 2), 1200 / (SR / 2)], btype="band")
    x = lfilter(b, a, colored(rng, n, "brown") + 0.3 * colored(rng, n, "white"))
    t = np.arange(n) / SR
    blade = rng.uniform(90, 250)
    x = x * (1 + 0.3 * np.sin(2 * np.pi * blade * t)) + 0.02 * np.sin(2 * np.pi * blade * t)
    return _norm(x)


def street(rng, n):
    x = colored(rng, n, "pink")
    env = np.ones(n)
    for _ in range(int(n / SR / 3)):  # passing cars: slow swells
        c, w = rng.integers(0, n), int(rng.uniform(1, 4) * SR)
        lo, hi = max(0, c - w), min(n, c + w)
        env[lo:hi] += rng.uniform(1, 6) * np.hanning(hi - lo)
    b, a = butter(2, 2500 / (SR / 2))
    return _norm(lfilter(b, a, x * env))


def _note(f):
    return 440.0 * 2 ** ((f - 69) / 12)


def music_chords(rng, n):
    """Training music: sustained chords of sines with a few harmonics."""
    out = np.zeros(n)
    pos = 0
    while pos < n:
        d = int(rng.uniform(0.4, 2.0) * SR)
        t = np.arange(min(d, n - pos)) / SR
        root = rng.integers(45, 70)
        env = np.minimum(1, t * 20) * np.exp(-t * rng.uniform(0.3, 2))
        chords = [[0, 4, 7], [0, 3, 7], [0, 4, 7, 11], [0, 5, 9]]
        for iv in chords[rng.integers(len(chords))]:
            f = _note(root + iv)
            out[pos:pos + len(t)] += env * sum(np.sin(2 * np.pi * f * k * t) / k ** 1.5 for k in (1, 2, 3))
        pos += d
    return _norm(out)


def music_bells(rng, n):
    """Training music with attacks: notes of decaying inharmonic partials (bells, piano-ish), arpeggiated."""
    out = np.zeros(n)
    pos = 0
    beat = int(rng.uniform(0.12, 0.5) * SR)
    while pos < n:
        f = _note(rng.integers(45, 90))
        length = min(int(SR * 1.5), n - pos)
        t = np.arange(length) / SR
        note = sum(np.exp(-t * rng.uniform(2, 8) * k) * np.sin(2 * np.pi * f * k * rng.uniform(0.995, 1.01) * t) / k
                   for k in (1, 2, 3, 4.2))
        out[pos:pos + length] += note * rng.uniform(0.3, 1.0)
        pos += beat if rng.random() < 0.8 else 2 * beat
    return _norm(out)


def music_plucks(rng, n):
    """Evaluation music: Karplus-Strong plucked arpeggios over a square-wave bass."""
    out = np.zeros(n)
    pos = 0
    beat = int(rng.uniform(0.15, 0.35) * SR)
    while pos < n:
        f = _note(rng.integers(50, 84))
        period = int(SR / f)
        length = min(int(SR * 1.0), n - pos)
        # y[i] = x[i] + 0.498 (y[i-p] + y[i-p-1]): the Karplus-Strong loop as one IIR filter
        a = np.zeros(period + 2)
        a[0], a[period], a[period + 1] = 1.0, -0.498, -0.498
        exc = np.zeros(length)
        exc[:min(period, length)] = rng.uniform(-1, 1, min(period, length))
        y = lfilter([1.0], a, exc)
        out[pos:pos + length] += y
        pos += beat
    t = np.arange(n) / SR
    bass = np.sign(np.sin(2 * np.pi * _note(rng.integers(33, 45)) * t))
    b, a = butter(2, 400 / (SR / 2))
    return _norm(out + 0.3 * lfilter(b, a, bass))


def babble(rng, n, utterances, talkers=(3, 7)):
    out = np.zeros(n)
    for _ in range(rng.integers(*talkers)):
        pos = int(rng.integers(0, SR))
        while pos < n:
            u = utterances[rng.integers(len(utterances))]
            k = min(len(u), n - pos)
            out[pos:pos + k] += u[:k] / (np.sqrt(np.mean(u ** 2)) + 1e-9)
            pos += k + int(rng.uniform(0.05, 0.5) * SR)
    return _norm(out)


def room_ir(rng, rt60=None):
    rt60 = rt60 or rng.uniform(0.15, 0.8)
    n = int(rt60 * SR)
    t = np.arange(n)
    tail = rng.standard_normal(n) * np.exp(-6.9 * t / n)
    tail[: int(rng.uniform(0.002, 0.01) * SR)] = 0
    h = tail * rng.uniform(0.1, 0.5) / (np.sqrt(np.sum(tail ** 2)) + 1e-9)
    h[0] = 1.0
    return h.astype(np.float32)


def reverb(x, h):
    return fftconvolve(x, h)[: len(x) + len(h) // 2].astype(np.float32)


def speed(x, factor):
    """Resamples so the voice is `factor` times faster and higher (a different-sized speaker)."""
    up, down = 100, int(round(100 * factor))
    return resample_poly(x, up, down).astype(np.float32)


def sox_tempo(x, factor):
    """Time-stretch by `factor` (>1 faster) with sox's WSOLA `tempo`: pitch and formants stay where they are."""
    if abs(factor - 1) < 0.01 or len(x) < 1600:
        return x.astype(np.float32)
    fmt = ["-t", "raw", "-r", str(SR), "-e", "floating-point", "-b", "32", "-c", "1"]
    r = subprocess.run(["sox", "-q", *fmt, "-", *fmt, "-", "tempo", "-s", f"{factor:.4f}"],
                       input=np.ascontiguousarray(x, np.float32).tobytes(), capture_output=True, check=True)
    return np.frombuffer(r.stdout, np.float32).copy()


def other_speaker(x, size, tempo):
    """The same utterance from a smaller (size > 1) or bigger speaker at `tempo` times the speed: resampling
    moves formants and pitch together by `size` (like a shorter or longer vocal tract), the time-stretch then sets
    the speed independently, so speaker size and speaking rate no longer move together as with speed() alone.
    With only 7 non-espeak voices (and one neural one) this is how the recipe gets more "speakers" out of them."""
    return sox_tempo(speed(x, size), tempo / size)


def random_speaker(rng, x, size=(0.84, 1.19), tempo=(0.9, 1.1)):
    """other_speaker with a size factor log-uniform in `size` (about +-3 semitones) and a speed in `tempo`."""
    return other_speaker(x, float(np.exp(rng.uniform(np.log(size[0]), np.log(size[1])))), rng.uniform(*tempo))


def active_power(x):
    n = len(x) // POWER_FRAME
    if n == 0:
        return float(np.mean(x ** 2) + 1e-12)
    e = (x[: n * POWER_FRAME].reshape(n, POWER_FRAME) ** 2).mean(axis=1)
    act = e[e > e.max() * 1e-3]
    return float(act.mean() + 1e-12)


def crop_from(rng, bank, n):
    """crop's n samples of the bank, and where in it they start."""
    s = int(rng.integers(0, max(1, len(bank) - n)))
    seg = bank[s:s + n]
    if len(seg) < n:
        seg = np.pad(seg, (0, n - len(seg)), mode="wrap")
    return seg, s


def crop(rng, bank, n):
    return crop_from(rng, bank, n)[0]


def mix_gain(speech, noise, snr_db):
    """The gain mix gives the noise: snr_db dB under the speech's active power."""
    ps, pn = active_power(speech), float(np.mean(noise ** 2) + 1e-12)
    return np.sqrt(ps / pn / 10 ** (snr_db / 10))


def mix(speech, noise, snr_db):
    return (speech + noise * mix_gain(speech, noise, snr_db)).astype(np.float32)


def set_level(rng, x, lo=-35.0, hi=-3.0):
    """Peak level in dBFS drawn from [lo, hi], clipped like a real ADC."""
    peak = np.max(np.abs(x)) + 1e-9
    y = x * (10 ** (rng.uniform(lo, hi) / 20) / peak)
    return np.clip(y, -1, INT16_MAX / INT16_SCALE).astype(np.float32)


def make_bank(rng, kind, seconds, utterances=None):
    n = int(seconds * SR)
    if kind in ("white", "pink", "brown"):
        return colored(rng, n, kind)
    if kind == "babble":
        return babble(rng, n, utterances)
    if kind == "babble_few":  # two or three talkers: speech-like enough to fool a detector trained without it
        return babble(rng, n, utterances, talkers=(1, 4))
    return {"hum": hum, "fan": fan, "street": street, "music_chords": music_chords, "music_bells": music_bells,
            "music_plucks": music_plucks}[kind](rng, n)


TRAIN_NOISES = ["white", "pink", "brown", "hum", "music_chords", "music_bells", "babble", "babble_few"]
EVAL_NOISES = ["fan", "street", "music_plucks", "babble"]
