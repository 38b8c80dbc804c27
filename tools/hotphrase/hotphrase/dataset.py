"""Augmentation into feature sets: positives with known phrase ends, and long negative feature streams."""
import glob
import hashlib
import os

import numpy as np

from . import augment as A
from . import frontend
from .constants import INT16_SCALE
from .constants import SAMPLE_RATE as SR
from .errors import HotPhraseError

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = os.environ.get("HOTPHRASE_REAL_KEYWORDS",
                      os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "real-keywords")))


def load_clips(path):
    z = np.load(path)
    a, o = z["audio"].astype(np.float32) / INT16_SCALE, z["offsets"]
    return [a[o[i]:o[i + 1]] for i in range(len(o) - 1)], [str(m) for m in z["meta"]]


def read_audio(path):
    """A 16 kHz mono recording (WAV or FLAC) as float32 in [-1, 1)."""
    import soundfile
    x, sr = soundfile.read(path, dtype="int16", always_2d=True)
    if sr != SR:
        raise HotPhraseError(path, f"{sr} Hz, not {SR}")
    return x.astype(np.float32).mean(axis=1) / INT16_SCALE


def real_clips(word, half):
    """The real recordings of `word` in half 'train' or 'eval' (split by file name hash), or all (half=None).
    The folders name files by a random id, not by speaker, so they cannot be split by speaker: recipe e1 uses
    none of them in training (train_format2.py)."""
    files = sorted(glob.glob(os.path.join(REAL, word, "*.wav")) + glob.glob(os.path.join(REAL, word, "*.flac")))
    if not files:
        raise HotPhraseError(os.path.join(REAL, word), "no real keyword recordings (.wav, .flac) here "
                             "(HOTPHRASE_REAL_KEYWORDS names their folder)")
    out = []
    for f in files:
        h = int(hashlib.sha1(os.path.basename(f).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        if half is None or (h < 0.5) == (half == "train"):
            out.append(read_audio(f))
    return out


REAL_SPEECH = os.path.join(os.path.dirname(REAL), "real-speech")
EVAL_SPEAKER_SHARE = 0.5


def is_eval_speaker(speaker):
    """Whether a speaker id belongs to the evaluation side (a hash decides, so nobody is on both sides; also used
    by get_public_negatives.py, so speechocean762's speakers fall on the same side there as here)."""
    h = int(hashlib.sha1(speaker.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return h < EVAL_SPEAKER_SHARE


def real_speech(split):
    """[(clip, speaker, group)] of ../shared/data/real-speech for split 'train' or 'eval', split by speaker (a
    speaker's hash decides, so nobody is on both sides). group: 'child' (speechocean762, aged 12 or under),
    'female' or 'male'."""
    return [(read_audio(f), spk, g) for f, spk, g in real_speech_files(groups=True)
            if is_eval_speaker(spk) == (split == "eval")]


def real_speech_files(groups=False):
    """[(path, speaker)] of every recording in ../shared/data/real-speech ([(path, speaker, group)] with groups);
    speaker ids are prefixed by corpus: 'so' speechocean762, 'ls' LibriSpeech."""
    import csv
    rows = []
    so = os.path.join(REAL_SPEECH, "speechocean762")
    with open(os.path.join(so, "speakers.tsv"), newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            g = "child" if int(r["age"]) <= 12 else {"f": "female", "m": "male"}[r["gender"].lower()]
            rows.append((os.path.join(so, r["file"]), "so" + r["speaker"], g))
    ls = os.path.join(REAL_SPEECH, "librispeech")
    sex = {}
    with open(os.path.join(ls, "SPEAKERS.TXT"), errors="ignore") as f:
        for line in f:
            parts = [p.strip() for p in line.split("|")]
            if len(parts) >= 2 and not line.startswith(";"):
                sex[parts[0]] = "female" if parts[1] == "F" else "male"
    for f in sorted(glob.glob(os.path.join(ls, "*.flac"))):
        spk = os.path.basename(f).split("-")[0]
        rows.append((f, "ls" + spk, sex.get(spk, "male")))
    return rows if groups else [(f, spk) for f, spk, _ in rows]


def active_seconds(x):
    """How long a clip's speech lasts: 10 ms frames whose mean log-mel energy is within 26 dB (6 natural-log units)
    of the loudest frame's. A rough measure, but the same for real and synthetic clips."""
    e = frontend.features(x).mean(axis=1)
    return float((e > e.max() - 6.0).sum()) * frontend.HOP / SR


def end_frame(end_sample):
    """First frame whose window reaches end_sample: the earliest moment the detector has heard the whole clip."""
    return max(0, -(-(end_sample - frontend.WINDOW) // frontend.HOP))


class Banks:
    """Long noise recordings to crop from."""

    def __init__(self, rng, kinds, seconds, utterances):
        self.kinds = kinds
        self.b = {k: A.make_bank(rng, k, seconds, utterances) for k in kinds}

    def noise(self, rng, n):
        return A.crop(rng, self.b[self.kinds[rng.integers(len(self.kinds))]], n)


def positive(rng, clip, banks, fillers, snr_range=(0, 20), snr=None, reverb_p=0.5, quiet=0.1, speaker=False):
    """One augmented positive: context before (so the network's 1.95 s sees only real audio), the phrase, then
    silence-with-noise or more speech after. Returns (audio, phrase start sample, phrase end sample).
    The defaults are the evaluation's, frozen (evaluate.py and diagnose.py rely on them drawing the same random
    numbers); training passes its own snr_range, quiet share and speaker=True (A.random_speaker instead of
    A.speed)."""
    x = A.random_speaker(rng, clip) if speaker else A.speed(clip, rng.uniform(0.88, 1.12))
    if rng.random() < reverb_p:
        x = A.reverb(x, A.room_ir(rng))
    before = int(max(rng.uniform(0.3, 1.2), 2.6 - len(x) / SR) * SR)
    after = int(rng.uniform(0.5, 1.0) * SR)
    pre = np.zeros(before, np.float32)
    post = np.zeros(after, np.float32)
    if fillers and rng.random() < 0.3:  # someone was talking just before
        f = fillers[rng.integers(len(fillers))]
        k = min(len(f), before - int(0.15 * SR))
        pre[before - int(0.15 * SR) - k: before - int(0.15 * SR)] = f[-k:] * rng.uniform(0.3, 1.0)
    if fillers and rng.random() < 0.4:  # the question follows the phrase
        f = fillers[rng.integers(len(fillers))]
        gap = int(rng.uniform(0.05, 0.3) * SR)
        k = min(len(f), after - gap)
        post[gap:gap + k] = f[:k] * rng.uniform(0.5, 1.0)
    speech = np.concatenate([pre, x, post])
    level = np.sqrt(A.active_power(x))
    speech = speech / (level + 1e-9) * 0.1
    # `quiet`: the share in a quiet room at 35-50 dB. (Not more: a third at 20-50 dB did not help the clean held-out
    # flite and festival voices and did worse at 10 dB, BENCHMARKS.md, recipe v3.)
    s = snr if snr is not None else (rng.uniform(*snr_range) if rng.random() < 1 - quiet else rng.uniform(35, 50))
    noise = banks.noise(rng, len(speech))
    ps = A.active_power(speech[before:before + len(x)])
    mixed = speech + noise * np.sqrt(ps / (np.mean(noise ** 2) + 1e-12) / 10 ** (s / 10))
    mixed = A.set_level(rng, mixed)
    return mixed, before, before + len(x)


def negative_piece(rng, clip, banks, snr_range=(-5, 25), reverb_p=0.4, quiet=(0.15, (35, 50)), speaker=False):
    """quiet: (share, SNR range) of pieces in a quiet room. The evaluation passes its own, fixed values so that
    changing the training recipe never changes the evaluation's audio. speaker: training's negatives get the
    positives' A.random_speaker too, so its time-stretch artefacts tell the network nothing."""
    if speaker:
        x = A.random_speaker(rng, clip) if rng.random() < 0.5 else clip
    else:
        x = A.speed(clip, rng.uniform(0.9, 1.1)) if rng.random() < 0.5 else clip
    if rng.random() < reverb_p:
        x = A.reverb(x, A.room_ir(rng))
    gap = np.zeros(int(rng.uniform(0.2, 1.0) * SR), np.float32)
    trail = gap[: len(gap) // 2]
    x = np.concatenate([gap, x, trail])
    s = rng.uniform(*snr_range) if rng.random() < 1 - quiet[0] else rng.uniform(*quiet[1])
    return A.set_level(rng, A.mix(x, banks.noise(rng, len(x)), s)), len(trail)


def stream(rng, pieces, banks, noise_seconds, mark=None, quiet=(0.15, (35, 50)), speaker=False):
    """Concatenates augmented pieces (shuffled) and stretches of pure noise (after them) into one recording.
    Returns (audio, sample ends of the pieces whose index is in `mark`, sample where the noise starts)."""
    order = rng.permutation(len(pieces))
    chunks, ends, pos = [], [], 0
    for i in order:
        a, trail = negative_piece(rng, pieces[i], banks, quiet=quiet, speaker=speaker)
        chunks.append(a)
        pos += len(a)
        if mark is not None and i in mark:
            ends.append(pos - trail)
    noise_start = pos
    left = int(noise_seconds * SR)
    while left > 0:
        n = min(left, int(rng.uniform(5, 30) * SR))
        chunks.append(A.set_level(rng, banks.noise(rng, n), -45, -10))
        left -= n
    return np.concatenate(chunks), ends, noise_start
