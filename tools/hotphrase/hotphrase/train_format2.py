"""Recipe e1 (hotphrase.train --format 2): a small classifier over Google's speech_embedding sequence
(hotphrase/embedding.py), trained from synthetic voices only, written as WORKDIR/PHRASE/e1/head.json + head.npz
(the contract with the Swift detector; export_embedding makes the format-2 model file of it).

  python -m hotphrase.train PHRASE WORKDIR --format 2 [--frames 16] [--hidden 128] [--steps 3000] [--seed 1]
                            [--out DIR] [--extra-negatives DIR ... [--extra-copies 2]]
                            [--slow-share 0.3 [--slow-tempo 0.6 0.85]]

Needs `python -m hotphrase.make_data PHRASE WORKDIR` first. Training data, each set embedded once and cached:
  - WORKDIR/cache/e1_neg_train.npz (shared by every phrase): the training sentences (Debian voices, piper,
    accented English; none holding any phrase's words) with the existing augmentation (another speaker's size
    and speed, room echo, training noises, quiet rooms), a share of them moved to a real training speaker's pitch
    and formants (hotphrase/voices.py), the real-speech folders' TRAINING speakers, and an hour of training noise,
    music and babble alone;
  - WORKDIR/PHRASE/e1/feat_pos.npz: each positive COPIES times augmented (hotphrase/dataset.py: positive, as v9 trains),
    half of them moved to a real speaker's voice first;
  - WORKDIR/PHRASE/e1/feat_conf.npz: the phrase's confusables, twice, as a stream with their ends marked.
  - with --slow-share S: a share S of the positive and of the confusable base clips first slowed down (sox tempo,
    --slow-tempo), cached apart (feat_pos_slow*.npz, feat_conf_slow*.npz), the rest of the recipe unchanged;
  - with --extra-negatives: real recordings from those folders (get_public_negatives.py's WORKDIR/public/train),
    --extra-copies augmented passes, cached as WORKDIR/cache/e1_neg_extra_*.npz.
No real keyword recording is used: their files carry no speaker, so they cannot be split by speaker, and they
all serve the evaluation (evaluate_format2.py).
"""
import json
import os
import time

import numpy as np

from . import augment as A
from . import dataset as D
from . import e1data
from . import embedding as E
from . import training, voices
from .constants import DEFAULT_THRESHOLD, EMB_DIM, REFRACTORY_SECONDS, SMOOTHING, STEP_SAMPLES, STEP_SECONDS
from .constants import SAMPLE_RATE as SR
from .errors import HotPhraseError
from .phrases import PHRASES
# Positives' noise as v9's: the negatives' shares, so cleanliness is no cue.
from .training import FILLERS, NOISE_SECONDS, POS_QUIET, POS_SNR

DEFAULTS = {"steps": 3000, "batch": 512}
# Augmented copies per positive clip: one (v9 makes five), as the embeddings cost 1.5 s of CPU per minute of audio
# and a positive clip is about 3 s; the 5,000 base clips are 5,000 different texts x voices x prosodies already.
COPIES = 1
VOICE_SHARE_POS = 0.5  # positives moved to a real training speaker's pitch and formants
VOICE_SHARE_NEG = 0.3  # ... and synthetic negatives, so a changed voice says nothing about the phrase
POS_AFTER_STEPS = 4  # positive windows end 0-320 ms after the phrase's end (the score smooths over 3 steps)
PART_STEPS = (5, 10)  # "compu...": windows ending 400-800 ms before the end must not fire
CONF_STEPS = 5  # windows ending in the 400 ms after a confusable's end
MINE_CHUNK = 16384  # windows scored at once while mining (100 MB of float32 inputs)
PRE_ROLL_SECONDS = 0.6
# Training sentences embedded for the shared negatives: at most this many Debian-voice ones (all piper and
# accented ones are kept), about 5 hours, for lack of CPU time: embedding costs 1.5 s of CPU per minute of audio.
MAX_DEBIAN_SENTENCES = 4000
MINED = 20000  # hard negative windows kept at each of the three minings


def voice_targets(workdir, sents):
    path = os.path.join(workdir, "cache", "voice_targets.json")
    return voices.targets(path, sents[:300])


def maybe_voice(rng, clip, tg, share):
    return voices.change_voice(rng, clip, tg) if rng.random() < share else clip


def _pos_worker(args):
    seed, (clips, fillers, tg) = args
    rng = np.random.default_rng(seed)
    banks = D.Banks(rng, A.TRAIN_NOISES, 120, fillers)
    embs, ends = [], []
    for c in clips:
        for _ in range(COPIES):
            x = maybe_voice(rng, c, tg, VOICE_SHARE_POS)
            audio, _, end = D.positive(rng, x, banks, fillers, snr_range=POS_SNR, quiet=POS_QUIET, speaker=True)
            # D.positive starts 2.6 s before the phrase's end; the cut-short phrase needs 2.75 s: more of the room
            # before it, at the level of its first 100 ms
            pre = banks.noise(rng, int(PRE_ROLL_SECONDS * SR))
            pre *= np.sqrt(np.mean(audio[:1600] ** 2) / (np.mean(pre ** 2) + 1e-12))
            audio, end = np.concatenate([pre, audio]).astype(np.float32), end + len(pre)
            # nothing after the last positive window is used: not embedded
            audio = audio[:end + STEP_SAMPLES * (POS_AFTER_STEPS + 2)]
            embs.append(e1data.embed(audio))
            ends.append(e1data.step_at(end))
    return embs, ends


def _neg_worker(args):
    seed, (pieces, marked, fillers, tg, synthetic, noise_seconds) = args
    rng = np.random.default_rng(seed)
    banks = D.Banks(rng, A.TRAIN_NOISES, 120, fillers)
    pieces = [maybe_voice(rng, p, tg, VOICE_SHARE_NEG) if s else p for p, s in zip(pieces, synthetic)]
    audio, ends, noise_start = D.stream(rng, pieces, banks, noise_seconds, mark=marked, speaker=True)
    return e1data.embed(audio), [e1data.step_at(e) for e in ends], e1data.step_at(noise_start)


def neg_jobs(seed, pieces, marked, fillers, tg, synthetic, noise_seconds):
    n = e1data.CHUNKS
    jobs = []
    for i in range(n):
        idx = list(range(i, len(pieces), n))
        jobs.append((seed + i, ([pieces[j] for j in idx], {k for k, j in enumerate(idx) if j in marked}, fillers,
                                tg, [synthetic[j] for j in idx], noise_seconds / n)))
    return jobs


def training_sentences(workdir, extra_words=()):
    """The training sentences: a fixed subset of the Debian voices' (MAX_DEBIAN_SENTENCES), piper's and the
    accented ones, without any phrase's words (nor `extra_words`)."""
    sents, meta = [], []
    for name in ("sent_train.npz", "sent_train_piper.npz", "sent_train_l2.npz"):
        path = os.path.join(workdir, "cache", name)
        if os.path.exists(path):
            s, m = D.load_clips(path)
            if name == "sent_train.npz":
                keep = np.sort(np.random.default_rng(7).permutation(len(s))[:MAX_DEBIAN_SENTENCES])
                s, m = [s[i] for i in keep], [m[i] for i in keep]
            sents, meta = sents + s, meta + m
    return [s for s, ok in zip(sents, e1data.phrase_free(meta, extra_words)) if ok]


def shared_negatives(workdir, procs, sents, tg):
    """The phrase-independent training negatives (cached): (embeddings, [(start, end) of noise-only steps])."""
    path = os.path.join(workdir, "cache", "e1_neg_train.npz")
    if not os.path.exists(path):
        real = [x for x, _, _ in D.real_speech("train")]
        pieces = sents + real
        synthetic = [True] * len(sents) + [False] * len(real)
        t = time.time()
        res = e1data.run(_neg_worker, neg_jobs(200, pieces, set(), sents[:FILLERS], tg, synthetic, NOISE_SECONDS),
                         procs)
        embs = [r[0] for r in res]
        noise = [(r[2], len(r[0])) for r in res]
        e1data.save_ragged(path, embs, noise=np.array(noise))
        print(f"shared negatives: {len(sents)} sentences, {len(real)} real training-speaker utterances, "
              f"{sum(len(e) for e in embs) * STEP_SECONDS / 3600:.2f} h in {time.time() - t:.0f} s", flush=True)
    emb, off, extra = e1data.load_ragged(path)
    noise = [(off[i] + a, off[i] + b) for i, (a, b) in enumerate(extra["noise"])]
    return emb, noise


def real_speech_copies(workdir, procs, sents, tg, copies):
    """More passes over the real training speakers (0.77 h, the only real speech training may use), each
    augmented anew (another size and speed, room echo, noise) and 30 % moved to another real speaker's pitch and
    formants; one cached file per pass."""
    real = [x for x, _, _ in D.real_speech("train")]
    out = []
    for c in range(copies):
        path = os.path.join(workdir, "cache", f"e1_neg_train_real{c + 1}.npz")
        if not os.path.exists(path):
            # the real utterances may be voice-changed too (the flag's name says "synthetic")
            res = e1data.run(_neg_worker, neg_jobs(400 + 10 * c, real, set(), sents[:FILLERS], tg,
                                                   [True] * len(real), 0), procs)
            e1data.save_ragged(path, [r[0] for r in res])
        out.append(e1data.load_ragged(path)[0])
    return out


EXTRA_PIECE_SECONDS = 10  # long extra recordings (noise) are cut into pieces of this length


def audio_files(dirs):
    """Every .flac and .wav under the folders, sorted (the order fixes the cache's content)."""
    out = []
    for d in dirs:
        for root, _, names in os.walk(d):
            out += [os.path.join(root, n) for n in names if n.lower().endswith((".flac", ".wav"))]
    return sorted(out)


def extra_negatives(workdir, procs, dirs, sents, tg, copies):
    """Real recordings from extra folders (get_public_negatives.py's WORKDIR/public/train), as negatives: COPIES
    passes, each augmented anew like the real-speech passes (another speaker's size and speed, room echo, training
    noise). No pass moves them to another speaker's pitch and formants with Praat: they are real voices already,
    and one of these recordings made Praat's "Change gender" run for over 15 minutes without end (a worker at full
    CPU inside the call), so it is not used on them. One cached file per pass, named by a hash of the file list."""
    import hashlib
    files = audio_files(dirs)
    if not files:
        raise HotPhraseError(" ".join(dirs), "no .flac or .wav files in these folders")
    tag = hashlib.sha1("\n".join(os.path.relpath(f, workdir) for f in files).encode()).hexdigest()[:10]
    pieces = None
    out = []
    for c in range(copies):
        path = os.path.join(workdir, "cache", f"e1_neg_extra_{tag}_{c + 1}.npz")
        if not os.path.exists(path):
            if pieces is None:
                step = EXTRA_PIECE_SECONDS * SR
                pieces = [x[i:i + step] for x in map(D.read_audio, files) for i in range(0, len(x), step)]
                pieces = [p for p in pieces if len(p) >= SR // 4]
            t = time.time()
            res = e1data.run(_neg_worker, neg_jobs(500 + 10 * c, pieces, set(), sents[:FILLERS], tg,
                                                   [False] * len(pieces), 0), procs)
            e1data.save_ragged(path, [r[0] for r in res])
            print(f"extra negatives pass {c + 1}: {len(files)} files, {len(pieces)} pieces, "
                  f"{sum(len(r[0]) for r in res) * STEP_SECONDS / 3600:.2f} h in {time.time() - t:.0f} s", flush=True)
        out.append(e1data.load_ragged(path)[0])
    return out


SLOW_TEMPO = (0.6, 0.85)  # --slow-share's speeds: BENCHMARKS.md's longest quarter of real clips is where heads fail
SLOW_SEED = 900


def slowed(clips, share, tempo, seed):
    """The clips, a share of them time-stretched (sox tempo: pitch and formants kept) to a speed drawn from
    `tempo`. Its own random numbers, so the augmentation draws that follow are the recipe's own."""
    if share <= 0:
        return clips
    rng = np.random.default_rng(seed)
    return [A.sox_tempo(c, rng.uniform(*tempo)) if rng.random() < share else c for c in clips]


def slow_tag(share, tempo):
    """The feature caches' name suffix: none for the recipe's own data."""
    return f"_slow{share:g}_{tempo[0]:g}-{tempo[1]:g}" if share > 0 else ""


def phrase_features(phrase, workdir, procs, sents, tg, slow_share=0.0, slow_tempo=SLOW_TEMPO):
    """(positive embeddings, offsets, phrase-end steps), (confusable stream embeddings, confusable end steps).
    slow_share: that share of the positive and confusable base clips slowed to slow_tempo first (the confusables
    too, so that slowness is no cue for the phrase)."""
    d = os.path.join(workdir, phrase, "e1")
    os.makedirs(d, exist_ok=True)
    fillers = sents[:FILLERS]
    tag = slow_tag(slow_share, slow_tempo)
    pos_path, conf_path = os.path.join(d, f"feat_pos{tag}.npz"), os.path.join(d, f"feat_conf{tag}.npz")
    if not os.path.exists(pos_path):
        pos = D.load_clips(os.path.join(workdir, phrase, "pos_train.npz"))[0]
        pos += D.load_clips(os.path.join(workdir, phrase, "pos_train_l2.npz"))[0]
        pos = slowed(pos, slow_share, slow_tempo, SLOW_SEED)
        t = time.time()
        res = e1data.run(_pos_worker, [(s, (c, fillers, tg)) for s, c in e1data.split_jobs(100, pos)], procs)
        e1data.save_ragged(pos_path, [e for r in res for e in r[0]], ends=np.array([e for r in res for e in r[1]]))
        print(f"positives: {len(pos)} clips x {COPIES} in {time.time() - t:.0f} s", flush=True)
    if not os.path.exists(conf_path):
        conf = D.load_clips(os.path.join(workdir, phrase, "conf_train.npz"))[0]
        conf += D.load_clips(os.path.join(workdir, phrase, "conf_train_l2.npz"))[0]
        pieces = slowed(conf + conf, slow_share, slow_tempo, SLOW_SEED + 1)
        t = time.time()
        res = e1data.run(_neg_worker, neg_jobs(300, pieces, set(range(len(pieces))), fillers, tg,
                                               [True] * len(pieces), 0), procs)
        embs, ends, off = [], [], 0
        for e, en, _ in res:
            embs.append(e)
            ends += [off + x for x in en]
            off += len(e)
        e1data.save_ragged(conf_path, embs, ends=np.array(ends))
        print(f"confusables: {len(conf)} clips x 2, {off * STEP_SECONDS / 3600:.2f} h in {time.time() - t:.0f} s",
              flush=True)
    pe, po, px = e1data.load_ragged(pos_path)
    ce, _, cx = e1data.load_ragged(conf_path)
    return (pe, po, px["ends"]), (ce, cx["ends"])


class Sampler:
    """Batches of head inputs (the last `frames` embeddings, flattened oldest first) and labels."""

    def __init__(self, frames, pos, conf, neg, noise, seed):
        self.n = frames
        self.rng = np.random.default_rng(seed)
        pe, po, pend = pos
        # one flat array of every step's embedding: positives, confusable stream, shared negatives
        self.emb = np.concatenate([pe, conf[0], neg])
        clip_start, clip_len = po[:-1], np.diff(po)
        ok = (pend >= frames - 1) & (pend + POS_AFTER_STEPS <= clip_len)
        self.pos_end = (clip_start + pend)[ok]
        self.dropped = int((~ok).sum())
        # the cut-short phrase only where the clip reaches back far enough (D.positive starts 2.6 s or more
        # before the phrase's end; this needs about 2.75 s)
        self.part_end = (clip_start + pend)[ok & (pend >= frames - 1 + PART_STEPS[1])]
        c0, n0 = len(pe), len(pe) + len(conf[0])
        ce = conf[1][(conf[1] >= frames - 1) & (conf[1] + CONF_STEPS < len(conf[0]))]
        self.conf_end = c0 + ce
        self.conf_any = np.arange(c0 + frames - 1, n0)
        self.neg_any = np.arange(n0 + frames - 1, len(self.emb))
        self.noise = np.concatenate([np.arange(n0 + max(a, frames - 1), n0 + b) for a, b in noise if b > a])
        self.mined = np.zeros(0, np.int64)
        self.nan_steps = self._drop_unfinite(frames)

    def _drop_unfinite(self, frames):
        """Leaves out every window holding a non-finite embedding. (Praat's "Change gender" once returned
        silence for clips without voiced frames, which the level normalisation turned into NaN; the sets
        embedded before hotphrase/voices.py caught it still hold a few such pieces.)"""
        bad = ~np.isfinite(self.emb).all(axis=1)
        if not bad.any():
            return 0
        cs = np.concatenate([[0], np.cumsum(bad)])

        def clean(ends, after=0):
            lo, hi = np.maximum(ends - frames + 1, 0), np.minimum(ends + after + 1, len(bad))
            return ends[cs[hi] - cs[lo] == 0]
        self.pos_end = clean(self.pos_end, POS_AFTER_STEPS)
        self.part_end = clean(self.part_end - PART_STEPS[1], PART_STEPS[1]) + PART_STEPS[1]
        self.conf_end, self.conf_any = clean(self.conf_end, CONF_STEPS), clean(self.conf_any)
        self.neg_any, self.noise = clean(self.neg_any), clean(self.noise)
        self.emb[bad] = 0  # never read now; keeps mining's arithmetic finite
        return int(bad.sum())

    def x(self, ends):
        idx = ends[:, None] + np.arange(-self.n + 1, 1)[None, :]
        return self.emb[idx].reshape(len(ends), -1).astype(np.float32)

    def batch(self, size):
        r = self.rng
        k = {"pos": size * 30 // 100, "part": size * 10 // 100, "conf": size * 15 // 100,
             "mined": size * 15 // 100 if len(self.mined) else 0, "noise": size * 10 // 100}
        k["rand"] = size - sum(k.values())
        ends = [self.pos_end[r.integers(0, len(self.pos_end), k["pos"])] + r.integers(0, POS_AFTER_STEPS, k["pos"]),
                self.part_end[r.integers(0, len(self.part_end), k["part"])] - r.integers(*PART_STEPS, k["part"]),
                self.conf_end[r.integers(0, len(self.conf_end), k["conf"])] + r.integers(0, CONF_STEPS, k["conf"]),
                self.mined[r.integers(0, max(1, len(self.mined)), k["mined"])],
                self.noise[r.integers(0, len(self.noise), k["noise"])],
                # random negatives: half from the confusable stream (whole words), half from the sentences
                np.concatenate([self.conf_any[r.integers(0, len(self.conf_any), k["rand"] // 4)],
                                self.neg_any[r.integers(0, len(self.neg_any), k["rand"] - k["rand"] // 4)]])]
        y = np.zeros(size, np.float32)
        y[:k["pos"]] = 1
        return self.x(np.concatenate(ends)), y

    def mine(self, predict, count):
        """The negative windows (confusables and sentences) the head likes most."""
        cand = np.concatenate([self.conf_any, self.neg_any])
        p = np.concatenate([predict(self.x(cand[s:s + MINE_CHUNK])) for s in range(0, len(cand), MINE_CHUNK)])
        top = np.argsort(p)[-count:]
        self.mined = cand[top]
        return float(p[top[0]])


def build_head(frames, hidden, layers):
    import keras
    from keras import layers as L
    inp = keras.Input((frames * EMB_DIM,))
    x = inp
    for i in range(layers):
        x = L.Dense(hidden, name=f"dense{i}")(x)
        x = L.LayerNormalization(epsilon=1e-5, name=f"norm{i}")(x)
        x = L.ReLU()(x)
    out = L.Dense(1, activation="sigmoid", name="out")(x)
    return keras.Model(inp, out)


def export(m, layers, out_dir, meta):
    """head.json + head.npz, the contract with the Swift detector (hotphrase/embedding.py: apply_layers)."""
    arrays, ops = {}, []
    for i in range(layers):
        w, b = m.get_layer(f"dense{i}").get_weights()
        g, be = m.get_layer(f"norm{i}").get_weights()
        arrays.update({f"dense{i}.w": w, f"dense{i}.b": b, f"norm{i}.gamma": g, f"norm{i}.beta": be})
        ops += [{"type": "dense", "w": f"dense{i}.w", "b": f"dense{i}.b"},
                {"type": "layernorm", "gamma": f"norm{i}.gamma", "beta": f"norm{i}.beta",
                 "eps": float(m.get_layer(f"norm{i}").epsilon)},
                {"type": "relu"}]
    w, b = m.get_layer("out").get_weights()
    arrays.update({"out.w": w, "out.b": b})
    ops += [{"type": "dense", "w": "out.w", "b": "out.b"}, {"type": "sigmoid"}]
    np.savez(os.path.join(out_dir, "head.npz"), **{k: v.astype(np.float32) for k, v in arrays.items()})
    head = {**meta, "embedding_dim": EMB_DIM, "layers": ops}
    with open(os.path.join(out_dir, "head.json"), "w") as out_file:
        json.dump(head, out_file, indent=1)
    return head


def add_arguments(g):
    """Format 2's own options (hotphrase.train adds the shared ones)."""
    g.add_argument("--frames", type=int, default=16, help="embeddings in the head's input (16 = 1.28 s)")
    g.add_argument("--hidden", type=int, default=128)
    g.add_argument("--layers", type=int, default=2)
    g.add_argument("--smoothing", type=int, default=SMOOTHING, help="score = mean of the last k head outputs")
    g.add_argument("--real-copies", type=int, default=3,
                   help="extra augmented passes over the real-speech training speakers (negatives)")
    g.add_argument("--label-smoothing", type=float, default=0.05)
    g.add_argument("--extra-negatives", nargs="+", default=[], metavar="DIR",
                   help="folders of real recordings (16 kHz .flac/.wav) to add as negatives, e.g. WORKDIR/public/train "
                        "from get_public_negatives.py (default: none, the recipe as before)")
    g.add_argument("--extra-copies", type=int, default=2, help="augmented passes over --extra-negatives")
    g.add_argument("--slow-share", type=float, default=0.0,
                   help="share of the positive and confusable clips slowed down first (0: the recipe as before)")
    g.add_argument("--slow-tempo", type=float, nargs=2, default=list(SLOW_TEMPO), metavar=("LO", "HI"),
                   help="the slowed clips' speed range (sox tempo factors)")
    g.add_argument("--features-only", action="store_true", help="make the cached embeddings, train nothing")


def run(a):
    """Trains the head and writes WORKDIR/PHRASE/e1 (or --out): head.json, head.npz."""
    t0 = time.time()
    sents = training_sentences(a.workdir)
    tg = voice_targets(a.workdir, sents)
    neg, noise = shared_negatives(a.workdir, a.procs, sents, tg)
    extra = extra_negatives(a.workdir, a.procs, a.extra_negatives, sents, tg, a.extra_copies) \
        if a.extra_negatives else []
    neg = np.concatenate([neg] + real_speech_copies(a.workdir, a.procs, sents, tg, a.real_copies) + extra)
    pos, conf = phrase_features(a.phrase, a.workdir, a.procs, sents, tg, a.slow_share, tuple(a.slow_tempo))
    if a.features_only:
        return
    s = Sampler(a.frames, pos, conf, neg, noise, a.seed)
    print(f"training windows: {len(s.pos_end)} positive clips ({s.dropped} too short, {len(s.part_end)} for the "
          f"cut-short phrase), {s.nan_steps} non-finite embedding steps left out, {len(s.conf_end)} "
          f"confusable ends, {len(s.neg_any) * STEP_SECONDS / 3600:.2f} h of negatives", flush=True)

    import keras
    keras.utils.set_random_seed(a.seed)
    m = build_head(a.frames, a.hidden, a.layers)
    sched = keras.optimizers.schedules.CosineDecay(1e-3, a.steps, alpha=0.01)
    # Label smoothing keeps the logits finite: without it the head drives them past 17, where float32's sigmoid is
    # exactly 1.0 for positives and the worst negatives alike, and no threshold can tell them apart.
    m.compile(optimizer=keras.optimizers.AdamW(sched, weight_decay=1e-2),
              loss=keras.losses.BinaryCrossentropy(label_smoothing=a.label_smoothing))
    print(f"head: {m.count_params()} parameters; {a.steps} steps of {a.batch}", flush=True)

    def predict(x):
        return m.predict_on_batch(x).reshape(-1)

    def remine():
        worst = s.mine(predict, MINED)
        return len(s.mined), worst
    training.fit(m, s, a.steps, a.batch, 1000, remine)
    out = a.out or os.path.join(a.workdir, a.phrase, "e1")
    os.makedirs(out, exist_ok=True)
    meta = {"phrase": PHRASES[a.phrase]["display"], "frames": a.frames, "smoothing": a.smoothing,
            "threshold": DEFAULT_THRESHOLD, "refractory_seconds": REFRACTORY_SECONDS,
            "training": {"recipe": "e1", "phrase_id": a.phrase, "steps": a.steps, "batch": a.batch,
                         "hidden": a.hidden, "layers": a.layers, "seed": a.seed, "copies": COPIES,
                         "real_speech_copies": a.real_copies, "label_smoothing": a.label_smoothing,
                         "extra_negatives": [os.path.relpath(d, a.workdir) for d in a.extra_negatives],
                         "extra_copies": a.extra_copies if a.extra_negatives else 0,
                         "slow_share": a.slow_share, "slow_tempo": list(a.slow_tempo) if a.slow_share > 0 else None,
                         "positive_clips": int(len(s.pos_end)), "negative_hours": round(len(s.neg_any) * STEP_SECONDS / 3600, 2),
                         "seconds": round(time.time() - t0)}}
    head = export(m, a.layers, out, meta)
    # the exported ops must give keras's numbers (what Swift reproduces is the export, not keras)
    x, _ = s.batch(a.batch)
    _, arrays = E.load_head(out)
    err = float(np.abs(E.apply_layers(head["layers"], arrays, x).reshape(-1) - predict(x)).max())
    if not err < 1e-4:
        raise HotPhraseError(out, f"the exported head differs from keras by {err} (more than 1e-4)")
    print(f"wrote {out}/head.json, head.npz after {time.time() - t0:.0f} s", flush=True)
