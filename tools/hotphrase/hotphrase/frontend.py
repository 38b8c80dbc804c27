"""The feature front end, exactly as Sources/HotPhrase/Features.swift computes it.

16 kHz mono, 30 ms Hann windows every 10 ms, 512-point FFT, power spectrum, 40 HTK-mel triangles between
60 and 7600 Hz, natural log with a floor. Frame t covers samples [t*160, t*160+480): the first frame exists once
480 samples have arrived, and each further 160 samples make one more, which is what a streaming detector sees.
Both sides build the filterbank from these numbers with the same formula (float64, then float32), so nothing but
the numbers needs to travel in the model file.
"""
import numpy as np

from .constants import FMAX, FMIN, HOP, INT16_SCALE, LOG_FLOOR, NFFT, NMEL, SAMPLE_RATE, WINDOW

BLOCK_FRAMES = 20000  # frames computed at once: bounded memory for hours of audio


def hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank():
    """(NMEL, NFFT//2+1) triangles on the FFT bin frequencies, peak 1, no area normalisation."""
    edges = mel_to_hz(np.linspace(hz_to_mel(FMIN), hz_to_mel(FMAX), NMEL + 2))
    freqs = np.arange(NFFT // 2 + 1) * SAMPLE_RATE / NFFT
    fb = np.zeros((NMEL, NFFT // 2 + 1))
    for m in range(NMEL):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        up = (freqs - lo) / (mid - lo)
        down = (hi - freqs) / (hi - mid)
        fb[m] = np.maximum(0.0, np.minimum(up, down))
    return fb.astype(np.float32)


def hann():
    n = np.arange(WINDOW)
    return (0.5 - 0.5 * np.cos(2.0 * np.pi * n / WINDOW)).astype(np.float32)


_FB = mel_filterbank()
_WIN = hann()


def features(samples):
    """samples: float32 in [-1, 1) (int16 / 32768). Returns (frames, NMEL) float32 log-mel energies."""
    x = np.asarray(samples, dtype=np.float32)
    if len(x) < WINDOW:
        return np.zeros((0, NMEL), np.float32)
    n = 1 + (len(x) - WINDOW) // HOP
    idx = np.arange(WINDOW)[None, :] + HOP * np.arange(n)[:, None]
    out = np.empty((n, NMEL), np.float32)
    step = BLOCK_FRAMES
    for s in range(0, n, step):
        fr = x[idx[s:s + step]] * _WIN
        spec = np.fft.rfft(fr, NFFT, axis=1)
        power = (spec.real.astype(np.float32) ** 2 + spec.imag.astype(np.float32) ** 2)
        out[s:s + step] = np.log(power @ _FB.T + LOG_FLOOR)
    return out


def to_float(int16):
    return np.asarray(int16, dtype=np.float32) / INT16_SCALE
