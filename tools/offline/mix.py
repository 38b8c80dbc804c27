"""Mixes NOISE under SPEECH at SNR dB (speech power over noise power, both over the speech file's length) and
writes OUT, 16 kHz 16-bit mono. The noise starts at an offset chosen from SEED.
  python3 mix.py SPEECH.wav NOISE(.flac|.wav) SNR OUT.wav SEED"""
import subprocess
import sys
import wave

import numpy as np


def read(path):
    raw = subprocess.run(["sox", path, "-t", "raw", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-"],
                         check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.int16).astype(np.float64)


speech, noise = read(sys.argv[1]), read(sys.argv[2])
snr, seed = float(sys.argv[3]), int(sys.argv[5])
if len(noise) < len(speech):
    noise = np.tile(noise, len(speech) // len(noise) + 1)
start = np.random.default_rng(seed).integers(0, len(noise) - len(speech) + 1)
noise = noise[start:start + len(speech)]
gain = np.sqrt(np.mean(speech ** 2) / max(1e-9, np.mean(noise ** 2)) / 10 ** (snr / 10))
mixed = speech + gain * noise
mixed *= min(1.0, 32000 / max(1.0, np.abs(mixed).max()))
with wave.open(sys.argv[4], "wb") as w:
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(16000)
    w.writeframes(mixed.astype(np.int16).tobytes())
