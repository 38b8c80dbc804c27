"""Step 2, format 1 (recipe v9, hotphrase.train --format 1): augment the training clips into features, train the
network, export the model file.

  python -m hotphrase.train PHRASE WORKDIR [--channels 96] [--steps 10000] [--seed 1] [--no-l2]
                            [--out WORKDIR/PHRASE/model.hpm]

Only training voices, training noise families and the training half of the real keyword recordings (never the
phrase's own word) are used here.
"""
import os
import time
# Not multiprocessing.Pool: when the kernel kills one of its workers (out of memory), Pool.map waits forever;
# the executor raises BrokenProcessPool instead, so a run fails rather than hangs.
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from . import augment as A
from . import dataset as D
from . import frontend, model, training
from .constants import DEFAULT_THRESHOLD, FRAMES_PER_HOUR, REFRACTORY_SECONDS
from .phrases import PHRASES
from .training import FILLERS, NOISE_SECONDS, POS_QUIET, POS_SNR

W = model.WINDOW_FRAMES
DEFAULTS = {"steps": 10000, "batch": 256}
MINED = 30000  # hard negative windows kept at each of the three minings


def _pos_worker(args):
    seed, clips, fillers, copies = args
    rng = np.random.default_rng(seed)
    banks = D.Banks(rng, [k for k in A.TRAIN_NOISES], 120, fillers)
    feats, marks = [], []
    for c in clips:
        for _ in range(copies):
            audio, start, end = D.positive(rng, c, banks, fillers, snr_range=POS_SNR, quiet=POS_QUIET, speaker=True)
            f = frontend.features(audio).astype(np.float16)
            feats.append(f)
            marks.append((D.end_frame(start + frontend.WINDOW), D.end_frame(end), len(f)))
    return feats, marks


def _neg_worker(args):
    seed, pieces, marked, fillers, noise_seconds = args
    rng = np.random.default_rng(seed)
    banks = D.Banks(rng, [k for k in A.TRAIN_NOISES], 120, fillers)
    audio, ends, noise_start = D.stream(rng, pieces, banks, noise_seconds, mark=marked, speaker=True)
    return frontend.features(audio).astype(np.float16), [D.end_frame(e) for e in ends], D.end_frame(noise_start)


def build(phrase, workdir, procs, copies, off=0, l2=True):
    ph = PHRASES[phrase]
    pos, _ = D.load_clips(os.path.join(workdir, phrase, "pos_train.npz"))
    conf, _ = D.load_clips(os.path.join(workdir, phrase, "conf_train.npz"))
    sents, meta = D.load_clips(os.path.join(workdir, "cache", "sent_train.npz"))
    piper = os.path.join(workdir, "cache", "sent_train_piper.npz")
    if os.path.exists(piper):  # the neural voice's sentences (make_data.py)
        ps, pm = D.load_clips(piper)
        sents, meta = sents + ps, meta + pm
    if l2:  # accented English (recipe v9, make_data.py): appended, so the clips before them are drawn as before
        pos += D.load_clips(os.path.join(workdir, phrase, "pos_train_l2.npz"))[0]
        conf += D.load_clips(os.path.join(workdir, phrase, "conf_train_l2.npz"))[0]
        ls, lm = D.load_clips(os.path.join(workdir, "cache", "sent_train_l2.npz"))
        sents, meta = sents + ls, meta + lm
    sents = [s for s, m in zip(sents, meta) if not any(w in m.lower() for w in ph["words"])]
    real = []
    for word in ("computer", "jarvis"):
        if word not in ph["words"]:
            real += D.real_clips(word, "train")
    print(f"train clips: {len(pos)} positive, {len(conf)} confusable, {len(sents)} sentences, "
          f"{len(real)} real keyword recordings (other words)", flush=True)
    fillers = sents[:FILLERS]
    t = time.time()
    n = 8
    with ProcessPoolExecutor(procs) as p:
        res = list(p.map(_pos_worker, [(off + 100 + i, pos[i::n], fillers, copies) for i in range(n)]))
    pfeats = [f for r in res for f in r[0]]
    pmarks = [m for r in res for m in r[1]]
    print(f"positives: {len(pfeats)} augmented clips in {time.time() - t:.0f} s", flush=True)
    t = time.time()
    pieces = sents + conf + conf + real + real
    marked = set(range(len(sents), len(sents) + 2 * len(conf) + 2 * len(real)))
    chunks = []
    for i in range(n):
        idx = list(range(i, len(pieces), n))
        chunks.append((off + 200 + i, [pieces[j] for j in idx], {k for k, j in enumerate(idx) if j in marked},
                       fillers, NOISE_SECONDS / n))
    with ProcessPoolExecutor(procs) as p:
        res = list(p.map(_neg_worker, chunks))
    nfeats, hard, noise, off = [], [], [], 0
    for f, ends, ns in res:
        nfeats.append(f)
        hard += [off + e for e in ends]
        noise.append((off + ns + W, off + len(f)))
        off += len(f)
    neg = np.concatenate(nfeats)
    print(f"negatives: {len(neg) / FRAMES_PER_HOUR:.2f} h of features, {len(hard)} confusable/real ends, "
          f"in {time.time() - t:.0f} s", flush=True)
    return pfeats, pmarks, neg, np.array(hard), noise


class Sampler:
    def __init__(self, pfeats, pmarks, neg, hard, noise, seed=0):
        self.rng = np.random.default_rng(seed)
        lens = np.array([len(f) for f in pfeats])
        self.pos = np.concatenate(pfeats)
        self.pstart = np.concatenate([[0], np.cumsum(lens)[:-1]])
        self.pm = np.array(pmarks)
        self.neg = neg
        self.hard = hard[(hard >= W) & (hard < len(neg) - 30)]
        self.mined = np.zeros(0, np.int64)
        # every frame index inside the pure-noise stretches (noise, music, babble alone)
        self.noise = np.concatenate([np.arange(a, b) for a, b in noise if b > a])

    def windows(self, arr, ends):
        idx = ends[:, None] + np.arange(-W + 1, 1)[None, :]
        return arr[idx].astype(np.float32)

    def batch(self, size):
        r = self.rng
        n_pos, n_part, n_hard, n_noise = size * 30 // 100, size * 10 // 100, size * 15 // 100, size * 10 // 100
        n_mined = size * 15 // 100 if len(self.mined) else 0
        n_rand = size - n_pos - n_part - n_hard - n_mined - n_noise
        i = r.integers(0, len(self.pm), n_pos)
        e = np.minimum(self.pm[i, 1] + r.integers(0, 13, n_pos), self.pm[i, 2] - 1)
        xp = self.windows(self.pos, self.pstart[i] + e)
        # the first part of the phrase ("okay hou"): the network must wait for the end
        i = r.integers(0, len(self.pm), n_part)
        e = np.maximum(self.pm[i, 1] - r.integers(35, 70, n_part), W - 1)
        xq = self.windows(self.pos, self.pstart[i] + e)
        e = self.hard[r.integers(0, len(self.hard), n_hard)] + r.integers(0, 30, n_hard)
        xh = self.windows(self.neg, e)
        xm = self.windows(self.neg, self.mined[r.integers(0, len(self.mined), n_mined)]) if n_mined else \
            np.zeros((0, W, frontend.NMEL), np.float32)
        xr = self.windows(self.neg, r.integers(W - 1, len(self.neg), n_rand))
        xn = self.windows(self.neg, self.noise[r.integers(0, len(self.noise), n_noise)])
        x = np.concatenate([xp, xq, xh, xm, xr, xn])
        y = np.concatenate([np.ones(n_pos), np.zeros(size - n_pos)]).astype(np.float32)
        return x, y


def keras_tensors(m, mean, std):
    """The network's float weights in the reference inference's layout (for mining hard negatives mid-training)."""
    return {"norm.mean": mean, "norm.inv_std": 1.0 / std, **model.keras_weights(m)}


def mine(m, mean, std, neg, count):
    """Ends of the negative windows the network currently likes most."""
    header = {"stack": model.STACK, "kernel": model.KERNEL, "dilations": model.DILATIONS}
    ts = keras_tensors(m, mean, std)
    ps, ends = [], []
    chunk = 400000
    for start in range(0, len(neg) - W, chunk - W):
        p = model.probabilities(header, ts, neg[start:start + chunk].astype(np.float32))
        ps.append(p)
        # element i belongs to step i+64 of this chunk, whose last frame is chunk frame 3(i+65)-1
        ends.append(start + (np.arange(len(p)) + model.RECEPTIVE_STEPS) * model.STACK - 1)
    p, ends = np.concatenate(ps), np.concatenate(ends)
    top = np.argsort(p)[-count:]
    worst = float(p[top[0]])
    ends = ends[top]
    return ends[(ends >= W) & (ends < len(neg))], worst


def add_arguments(g):
    """Format 1's own options (hotphrase.train adds the shared ones)."""
    g.add_argument("--channels", type=int, default=96)
    g.add_argument("--copies", type=int, default=5, help="augmented copies of each positive clip")
    # Recipe v9 is v6 plus the accented-English clips (make_data.py); --no-l2 trains v6.
    g.add_argument("--no-l2", action="store_true", help="without the accented-English clips (recipe v6)")


def check_seed(ap, a):
    # The run-to-run spread of a recipe (one seed says nothing about it): --seed moves every random stream of the
    # run (augmentation workers, batch sampler, keras/TF/numpy/python random); the default 1 gives exactly the
    # numbers of the runs made before the option existed (workers 100+i/200+i, sampler 0, keras 1).
    if a.seed < 1:
        ap.error("--seed must be >= 1 (format 1)")


def run(a):
    """Trains and exports WORKDIR/PHRASE/model.hpm (or --out)."""
    off = 1000 * (a.seed - 1)
    out = a.out or os.path.join(a.workdir, a.phrase, "model.hpm")
    t0 = time.time()
    pfeats, pmarks, neg, hard, noise = build(a.phrase, a.workdir, a.procs, a.copies, off, l2=not a.no_l2)
    sample = np.concatenate([np.concatenate(pfeats[:2000]), neg[::7]]).astype(np.float32)
    mean, std = sample.mean(axis=0), sample.std(axis=0) + 1e-3
    s = Sampler(pfeats, pmarks, neg, hard, noise, seed=off)

    import keras
    keras.utils.set_random_seed(a.seed)
    m = model.build_keras(a.channels, mean, std)
    sched = keras.optimizers.schedules.CosineDecay(2e-3, a.steps, alpha=0.01)
    m.compile(optimizer=keras.optimizers.Adam(sched), loss="binary_crossentropy")
    print(f"network: {m.count_params()} parameters; training {a.steps} steps of {a.batch}", flush=True)

    def remine():
        s.mined, worst = mine(m, mean, std, neg, MINED)
        return len(s.mined), worst
    training.fit(m, s, a.steps, a.batch, 500, remine, step_ms=True)
    meta = {"phrase": PHRASES[a.phrase]["display"], "phrase_id": a.phrase, "default_threshold": DEFAULT_THRESHOLD,
            "refractory_seconds": REFRACTORY_SECONDS,
            "training": {"steps": a.steps, "batch": a.batch, "channels": a.channels, "copies": a.copies,
                         "recipe": "v6" if a.no_l2 else "v9", "seed": a.seed,
                         "positives": len(pfeats), "negative_hours": round(len(neg) / FRAMES_PER_HOUR, 2),
                         "seconds": round(time.time() - t0)}}
    model.export(m, mean, std, out, meta)
    print(f"wrote {out} ({os.path.getsize(out)} bytes) after {time.time() - t0:.0f} s", flush=True)
