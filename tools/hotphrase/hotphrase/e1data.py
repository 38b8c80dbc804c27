"""Recipe e1's data: augmented audio turned into speech_embedding sequences (hotphrase/embedding.py), in worker
processes, cached as .npz in the work directory (the embeddings are what costs: about 1.5 s of CPU per minute of
audio, so each set is made once and shared by every phrase and every head trained on it).
"""
# Not multiprocessing.Pool: when the kernel kills one of its workers (out of memory), Pool.map waits forever;
# the executor raises BrokenProcessPool instead, so a run fails rather than hangs.
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from . import embedding as E
from .constants import EMB_DIM, STEP_SAMPLES
from .phrases import PHRASES

CHUNKS = 8  # worker jobs per set (each with its own seed), so a set does not depend on the number of cores
_FE = None


def frontend():
    """One TFLite front end per worker process."""
    global _FE
    if _FE is None:
        _FE = E.Frontend()
    return _FE


def embed(audio):
    return frontend()(audio).astype(np.float16)


def step_at(sample):
    """The first embedding step that has heard everything up to `sample`."""
    return max(0, -(-(sample - E.step_end_sample(0)) // STEP_SAMPLES))


def phrase_free(texts_meta, extra_words=()):
    """Whether each synthetic clip's text is free of every phrase's words: sentence negatives shared by all
    phrases must not hold any of them (14 of the 12,516 Debian sentences say "computer"). A phrase marked
    "shared": False (the stop word) is left out of that list; its own negatives pass its words as extra_words."""
    words = [w for ph in PHRASES.values() if ph.get("shared", True) for w in ph["words"]] + list(extra_words)
    return [not any(w in m.lower() for w in words) for m in texts_meta]


def run(fn, jobs, procs):
    with ProcessPoolExecutor(procs) as p:
        return list(p.map(fn, jobs))


def split_jobs(seed, items, n=CHUNKS):
    """n jobs of every n-th item, seeded seed+i."""
    return [(seed + i, items[i::n]) for i in range(n)]


def save_ragged(path, arrays, **extra):
    """Saves a list of (steps, 96) arrays as one array with offsets (np.savez, float16)."""
    lens = np.array([len(a) for a in arrays], np.int64)
    np.savez(path, emb=np.concatenate(arrays) if arrays else np.zeros((0, EMB_DIM), np.float16),
             offsets=np.concatenate([[0], np.cumsum(lens)]), **extra)


def load_ragged(path):
    z = np.load(path)
    return z["emb"], z["offsets"], {k: z[k] for k in z.files if k not in ("emb", "offsets")}
