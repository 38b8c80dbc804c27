"""The held-out evaluation audio both evaluations draw: evaluate_format1.py and evaluate_format2.py (recipe e1), from
the same seed and in the same order, so that recipe e1's held-out synthetic positives are the very clips v9 was
measured on. Any change here changes both evaluations' audio (and the comparison with every earlier run).

The held-out sentences (WORKDIR/cache/sent_eval.npz, held-out voices reading texts training never read) are used
in three ranges: [0, 300) babble in the noise banks, [300, 700) speech just before and after the positives,
[700, ...) the negative speech.
"""
import os

import numpy as np

from . import augment as A
from . import dataset as D
from .constants import EVAL_SEED

BANK_SECONDS = 300  # each held-out noise family's bank (fan, street, plucked music, held-out-voice babble)
BANK_SENTENCES = 300  # sentences [0, 300): the babble bank's voices
FILLERS_END = 700  # sentences [300, 700): speech around the positives
NEGATIVES_FROM = FILLERS_END  # sentences [700, ...): the negative speech stream
# Negative pieces in a quiet room (35-50 dB SNR): 15 %, the rest at -5 to 25 dB (dataset.negative_piece). Fixed
# here: the evaluation's audio must not move when the training recipe does (it did once, between two models
# compared on it).
QUIET = (0.15, (35, 50))
NOISE_DBFS = (-40, -10)  # peak level of the stretches of noise, music and babble alone
# v9's real negatives: the evaluation half of the real recordings of these words, except the phrase's own
V9_REAL_NEGATIVE_WORDS = ("computer", "jarvis")
# Before each real keyword recording: held-out fan noise at the recording's own noise floor, so that the network's
# window holds audio, not a cliff of zeros; after it, digital silence.
REAL_LEAD_SECONDS = 2
REAL_TAIL_SECONDS = 0.3


def rng():
    """The evaluation's random numbers: the same on every run, for every model."""
    return np.random.default_rng(EVAL_SEED)


def sentences(workdir, keep):
    """The held-out sentences whose metadata (voice and text) passes keep(list of meta) -> list of bools."""
    sents, meta = D.load_clips(os.path.join(workdir, "cache", "sent_eval.npz"))
    return [s for s, ok in zip(sents, keep(meta)) if ok]


def without_words(words):
    """A `keep` for sentences(): the texts without any of these words."""
    return lambda meta: [not any(w in m.lower() for w in words) for m in meta]


def banks(rng, sents):
    """The held-out noise families' banks (the first draws from rng)."""
    return D.Banks(rng, A.EVAL_NOISES, BANK_SECONDS, sents[:BANK_SENTENCES])


def fillers(sents):
    return sents[BANK_SENTENCES:FILLERS_END]


def v9_real_negatives(phrase_words):
    """The real clips v9's evaluation puts into its negative stream: the evaluation half of the other of
    computer/jarvis."""
    out = []
    for word in V9_REAL_NEGATIVE_WORDS:
        if word not in phrase_words:
            out += D.real_clips(word, "eval")
    return out


def negative_speech(rng, pieces, banks):
    """The pieces (shuffled), each augmented in held-out noise, as one stream: (audio, _, _) as D.stream."""
    return D.stream(rng, pieces, banks, 0, quiet=QUIET)


def noise_level(rng, x):
    """A stretch of noise alone at a random peak level (one draw)."""
    return A.set_level(rng, x, *NOISE_DBFS)
