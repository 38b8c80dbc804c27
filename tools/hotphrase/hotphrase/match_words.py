"""Were these the words? The box's local Houndify service has no recogniser, so the answer heard on the far side
of the loopback card is matched against the speaker's own voice (`hound-speaker say`) saying the expected words
and saying a different sentence: the recording must be clearly closer to the expected words.

    python -m hotphrase.match_words HEARD EXPECTED OTHER [--margin 0.5]

tools/pi-box/run.sh runs it on the host (from tools/hotphrase, with Debian's python3-numpy and python3-scipy).
Each WAV (16-bit PCM, any rate, mono or the first channel) is brought to 16 kHz, turned into log-mel frames by the
hot-phrase tools' front end (frontend.py, the one Sources/HotPhrase computes), each band's mean taken out (the
loopback's level and the output volume change the level, not the words), and aligned with the others by dynamic time
warping (cosine distance between frames, the path's mean). Prints both distances; exits 0 when distance(HEARD,
EXPECTED) < margin x distance(HEARD, OTHER), 1 when not, 2 on bad input. The margin: espeak-ng's "It's 5:17 AM."
(quieter, with noise) against itself and "Turn on the kitchen lights." gave ratios of 0.29 to 0.36 over four times of
day; the same recordings against a wrong time of the same form ("It's 9:51 AM.") 0.62 to 0.77, so 0.5 tells the right
answer from a wrong one of the same length and rhythm.
"""
import argparse
import sys
import wave

import numpy as np
from scipy.signal import resample_poly

from . import cli
from .frontend import features

RATE = 16000


def bad_input(message):
    print(f"match-words: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    """16 kHz float samples of a 16-bit PCM WAV."""
    try:
        with wave.open(path, "rb") as w:
            if w.getsampwidth() != 2:
                raise ValueError(f"{w.getsampwidth() * 8}-bit samples, not 16-bit PCM")
            rate, channels = w.getframerate(), w.getnchannels()
            data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    except (OSError, EOFError, wave.Error, ValueError) as error:
        bad_input(f"{path}: cannot be read as a WAV file: {error}")
    samples = data[::channels].astype(np.float32) / 32768.0
    if rate != RATE:
        g = np.gcd(rate, RATE)
        samples = resample_poly(samples, RATE // g, rate // g).astype(np.float32)
    if len(samples) < RATE // 10:
        bad_input(f"{path}: {len(samples) / RATE:.2f} s of sound, too short to match words")
    return samples


def frames(samples):
    f = features(samples).astype(np.float64)
    f -= f.mean(axis=0, keepdims=True)
    return f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-9)


def dtw(a, b):
    """The mean cosine distance along the cheapest monotonic alignment of a's frames with b's."""
    cost = 1.0 - a @ b.T
    n, m = cost.shape
    total = np.full((n + 1, m + 1), np.inf)
    steps = np.zeros((n + 1, m + 1))
    total[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            choices = (total[i - 1, j - 1], total[i - 1, j], total[i, j - 1])
            k = int(np.argmin(choices))
            prev = ((i - 1, j - 1), (i - 1, j), (i, j - 1))[k]
            total[i, j] = cost[i - 1, j - 1] + choices[k]
            steps[i, j] = steps[prev] + 1
    return total[n, m] / steps[n, m]


def main(argv=None):
    # not cli.command: exit status 1 means "no match" here, and a bad input is 2
    parser = argparse.ArgumentParser(prog=f"python -m {cli.module_name(__name__)}",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("heard")
    parser.add_argument("expected")
    parser.add_argument("other")
    parser.add_argument("--margin", type=float, default=0.5,
                        help="the expected words' distance must be under this fraction of the other sentence's")
    args = parser.parse_args(argv)
    if not 0 < args.margin <= 1:
        bad_input(f"--margin {args.margin}: must be in (0, 1]")
    heard, expected, other = (frames(load(p)) for p in (args.heard, args.expected, args.other))
    to_expected, to_other = dtw(heard, expected), dtw(heard, other)
    ok = to_expected < args.margin * to_other
    print(f"match-words: distance to the expected words {to_expected:.3f}, to the other sentence {to_other:.3f} "
          f"(ratio {to_expected / to_other:.2f}, must be under {args.margin}): {'match' if ok else 'NO MATCH'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
