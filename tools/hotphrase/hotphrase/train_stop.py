"""The stop word for everyone (issue #61): a head on speech_embedding that hears "stop" said over the speaker's own
sound, trained with recipe e1's machinery (train_format2.py) and with the real recordings of the word that could be
reached (hotphrase.get_stop_clips: the Speech Commands v0.02 test set's "stop", its training speakers only).

  python -m hotphrase.make_data stop WORKDIR [counts]           # the synthetic clips (as every phrase)
  python -m hotphrase.get_stop_clips WORKDIR --mirrors DIR       # the real ones, split by speaker
  python -m hotphrase.train_stop WORKDIR [--out DIR] [--steps 3000] [--seed 1] [--real-copies 10]

Writes OUT (default WORKDIR/stop/head) as head.json + head.npz (the format-2 head contract, train_format2.export;
hotphrase.export_embedding makes the model file), and own.json: its scores on held-out own sound and the threshold
set from them. The detector listens for it only while the speaker rings or speaks, so what it must not fire on is
that sound above all; what it must hear is a person saying "stop" over it, through the echo canceller or not.

Training data, each set embedded once and cached in WORKDIR/stop/cache:
  - positives: make_data's synthetic "stop" clips (training voices, half moved to a real speaker's pitch and
    formants) and the real training-side clips, --real-copies augmented passes each (another speaker's size and
    speed, room echo, training noise); in every set --own-share of them then heard over the speaker's own sound
    (below) at an echo-to-speech ratio in --esr (default -35 to 0 dB: the canceller's residual; the speaker
    listens over its own sound only with echo cancellation on); with --residual, also the training-side real clips
    said over the answers and over the ring as the speaker's canceller left them (the dump's realvg* files, in
    double talk), --talk-copies crops of each;
  - the speaker's own sound (negatives): its espeak-ng -v en-us voice reading training sentences (none saying
    "stop"; not the answers the benchmark's room set speaks) and its timer ring (share/earcons/timer.wav), each
    through a random room, at random levels with training noise under them, alone and with a person talking over
    them; with --residual, what the canceller left of that sound instead, and --clean-own-hours of it as it plays
    beside (a canceller still converging, or one that has lost its path, passes it nearly whole); with
    --ring-residual, --ring-hours of what the canceller left of the ring alone (a room set made with
    --own-ring-share 1, dumped: each ring's start as the filter converges on it, and its end);
  - the shared negatives of recipe e1 (sentences by the training voices, none saying "stop", the real-speech
    training speakers, training noise alone), made for this word (its own cache, not the other phrases');
  - confusables: make_data's ("top", "shop", "stock", ...) and the other words of the real clips' training speakers
    (yes, no, up, down, left, right, on, off, go and more), as the positives over the own sound.
"""
import json
import os
import subprocess
import tempfile
import time
import zlib

import numpy as np

from . import augment as A
from . import cli
from . import dataset as D
from . import e1data
from . import embedding as E
from . import get_stop_clips as G
from . import synth, training
from . import train_format2 as T2
from .constants import REFRACTORY_SECONDS, SMOOTHING, STEP_SECONDS
from .constants import SAMPLE_RATE as SR
from .errors import HotPhraseError

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TIMER_WAV = os.path.join(REPO, "share", "earcons", "timer.wav")
ESR_RANGE = (-30.0, 20.0)  # echo over speech at the microphone: canceller residual ... no canceller (negatives)
# The positives' and confusables' range (--esr): what the detector hears with echo cancellation on, the canceller's
# residual (the speaker listens over its own sound only then: no barge-in without it).
POS_ESR_RANGE = (-35.0, 0.0)
OWN_SHARE = 0.6  # share of positives and confusables heard over the speaker's own sound (--own-share)
MIN_TALK_OVER_NOISE_DB = 10.0  # a dump's phrase quieter than the room's noise plus this is not a positive
OWN_SECONDS = 10800  # own sound alone (and with talk over it) among the negatives (--own-hours)
OWN_TEXTS = 1200  # training sentences its voice reads (--own-texts)
EVAL_OWN_SECONDS = 3600  # held-out own sound (other sentences, other rooms) for the threshold
ANSWER_DBFS = -20.0


def trim_active(x, rel_db=30.0, margin=0.08):
    """A real clip cut to its speech: 10 ms frames within rel_db of the loudest, with margin seconds either side."""
    f = SR // 100
    n = len(x) // f
    if n == 0:
        return x
    e = 10 * np.log10((x[: n * f].reshape(n, f) ** 2).mean(axis=1) + 1e-12)
    on = np.nonzero(e > e.max() - rel_db)[0]
    a, b = max(0, on[0] * f - int(margin * SR)), min(len(x), (on[-1] + 1) * f + int(margin * SR))
    return x[a:b].astype(np.float32)


def espeak(texts, procs=2):
    """The speaker's own voice (espeak-ng -v en-us, as the room set's answers) for each text, 16 kHz, at
    ANSWER_DBFS over its active frames."""
    from scipy.signal import resample_poly
    out = []
    with tempfile.TemporaryDirectory() as d:
        for i, t in enumerate(texts):
            p = os.path.join(d, f"{i}.wav")
            subprocess.run(["espeak-ng", "-v", "en-us", "-w", p, t], check=True, capture_output=True)
            x = D.read_audio(p) if p.endswith(".flac") else _read_wav(p)
            if x is None or len(x) < SR // 4:
                continue
            out.append(x * 10 ** ((ANSWER_DBFS - 10 * np.log10(A.active_power(x))) / 20))
    return out


def _read_wav(path):
    import soundfile
    from scipy.signal import resample_poly
    x, sr = soundfile.read(path, dtype="float32", always_2d=True)
    x = x.mean(axis=1)
    if sr != SR:
        g = np.gcd(sr, SR)
        x = resample_poly(x, SR // g, sr // g).astype(np.float32)
    return x


def timer_ring():
    return _read_wav(TIMER_WAV)


def own_texts(split):
    """Sentences for the own voice: the training half of synth.sentences() for training, the other half for the
    threshold's held-out own sound; none saying "stop"."""
    s = synth.sentences()
    half = len(s) // 2
    s = s[:half] if split == "train" else s[half:]
    return [t for t in s if "stop" not in t.lower()]


def own_stream(rng, speech, ring, seconds):
    """seconds of the speaker's sound as it plays: answers one after another with short pauses, a ring about a
    fifth of the time (10-40 s of it)."""
    n = int(seconds * SR)
    x = np.zeros(n, np.float32)
    t = 0
    while t < n:
        if rng.random() < 0.06:
            seg = np.tile(ring, int(rng.uniform(10, 40) * SR) // len(ring) + 1)[: int(rng.uniform(10, 40) * SR)]
            seg = seg * 10 ** ((ANSWER_DBFS - 10 * np.log10(A.active_power(seg))) / 20)
        else:
            seg = speech[rng.integers(len(speech))]
        m = min(len(seg), n - t)
        x[t:t + m] = seg[:m]
        t += len(seg) + int(rng.uniform(0.2, 0.8) * SR)
    return x


# --residual DIR: what the speaker's canceller left of its own sound (hound-speaker-bench aec ROOMSET --only dump
# --dump-dir DIR, over a room set made with --answer-texts sentences): {"speech": ..., "ring": ...}, used by Own in
# place of the synthetic echo. Set in main before the worker processes start (they inherit it).
RESIDUAL = None
# --ring-residual DIR: the dump of a ring-only room set (its own-speech and echo-only-ring), {"ring": ..., "key": ...}.
RING_RESIDUAL = None


def load_residual(d):
    import glob
    def cat(kinds):
        files = sorted(f for k in kinds for f in glob.glob(os.path.join(d, k, "*.wav")))
        if not files:
            raise HotPhraseError(d, f"no {'/'.join(kinds)} WAV files (hound-speaker-bench aec ... --only dump)")
        return np.concatenate([_read_wav(f) for f in files]).astype(np.float32)
    talk = []  # (file, [(start, end) samples]): a person over the own sound, through the canceller (dump's realvg*)
    for f in sorted(glob.glob(os.path.join(d, "realvg*", "*.wav"))):
        labels = f[:-4] + ".json"
        try:
            with open(labels) as j:
                L = json.load(j)
            floor = L.get("noise", {}).get("rms_dbfs")
            # A phrase scaled for its ESR to the echo of a pause (room sets made before aec_room placed real clips
            # where the ring plays too) is no voice at all: as a positive it taught that the residual is "stop".
            spans = [(int(p["start_sample"]), int(p["end_sample"])) for p in L["phrases"]
                     if floor is None or p.get("level_dbfs") is None or p["level_dbfs"] >= floor + MIN_TALK_OVER_NOISE_DB]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise HotPhraseError(labels, f"no phrase spans beside {os.path.basename(f)} ({e})") from e
        if spans:
            talk.append((f, spans))
    # the caches made from a residual are named by its files (their names and sizes), so another folder makes its own
    listing = sorted((os.path.relpath(f, d), os.path.getsize(f)) for f in glob.glob(os.path.join(d, "*", "*.wav")))
    key = f"{zlib.crc32(repr(listing).encode()):08x}"
    return {"speech": cat(["own-speech", "echo-only"]), "ring": cat(["echo-only-ring"]), "talk": talk, "key": key}


def load_ring_residual(d):
    import glob
    files = sorted(f for k in ("own-speech", "echo-only-ring") for f in glob.glob(os.path.join(d, k, "*.wav")))
    if not files:
        raise HotPhraseError(d, "no own-speech/echo-only-ring WAV files (hound-speaker-bench aec ... --only dump, over "
                                "a room set made with --own-ring-share 1)")
    listing = [(os.path.relpath(f, d), os.path.getsize(f)) for f in files]
    return {"ring": np.concatenate([_read_wav(f) for f in files]).astype(np.float32),
            "key": f"{zlib.crc32(repr(listing).encode()):08x}"}


def _talk_worker(args):
    """Positives in double talk: each phrase of the dump's realvg* files, as the canceller left it, cropped with
    2.6-3.2 s before its end (the residual before the word) and up to the window's end after it, at a random level."""
    seed, (items, copies) = args
    rng = np.random.default_rng(seed)
    embs, ends, path, x = [], [], None, None
    for f, a, b in sorted(items):
        if f != path:  # sorted: each file is read once
            path, x = f, _read_wav(f)
        for _ in range(copies):
            audio, end = talk_crop(rng, x, b)
            if np.any(audio):
                embs.append(e1data.embed(audio))
                ends.append(e1data.step_at(end))
    return embs, ends


def talk_crop(rng, x, end):
    """The phrase ending at sample `end` of x with 2.6-3.2 s before its end and a positive window's steps after it,
    at a random level; returns the crop and the phrase's end in it."""
    lo = max(0, end - int(rng.uniform(2.6, 3.2) * SR))
    audio = x[lo:end + T2.STEP_SAMPLES * (T2.POS_AFTER_STEPS + 2)]
    return A.set_level(rng, audio), end - lo


class Own:
    """Crops of the speaker's own sound (answers and ring) through a random room; with RESIDUAL, crops of what
    the canceller left of it (unless clean: the sound as it plays, which the detector hears when the canceller
    has not yet converged or has lost its path)."""

    def __init__(self, rng, speech, ring, seconds, clean=False):
        self.bank = own_stream(rng, speech, ring, seconds)
        self.ring = ring
        self.clean = clean

    def echo(self, rng, n, ring=None):
        ring = rng.random() < 0.35 if ring is None else ring
        if RESIDUAL is not None and not self.clean:
            return A.crop(rng, RESIDUAL["ring" if ring else "speech"], n).astype(np.float32)
        if ring:
            ph = int(rng.integers(len(self.ring)))
            x = np.tile(self.ring, (ph + n) // len(self.ring) + 2)[ph:ph + n]
        else:
            x = A.crop(rng, self.bank, n)
        if rng.random() < 0.8:
            x = A.reverb(x, A.room_ir(rng))[:n]
        return x.astype(np.float32)


def over_own(rng, audio, start, end, own, esr=None, esr_range=ESR_RANGE):
    """audio with the speaker's own sound added at an echo-to-speech ratio (dB over the word's span)."""
    e = own.echo(rng, len(audio))
    ps = A.active_power(audio[start:end])
    # (a residual can be nearly silent over the word: then its level over the whole crop)
    pe = max(float(np.mean(e[start:end] ** 2)), 0.1 * float(np.mean(e ** 2))) + 1e-12
    esr = rng.uniform(*esr_range) if esr is None else esr
    return A.set_level(rng, audio + e * np.sqrt(ps / pe * 10 ** (esr / 10)))


def _pos_worker(args):
    seed, (clips, fillers, tg, voice_share, own_args, esr_range, own_share) = args
    rng = np.random.default_rng(seed)
    banks = D.Banks(rng, A.TRAIN_NOISES, 120, fillers)
    own = Own(rng, *own_args)
    embs, ends = [], []
    for c in clips:
        x = T2.maybe_voice(rng, c, tg, voice_share)
        audio, start, end = D.positive(rng, x, banks, fillers, snr_range=T2.POS_SNR, quiet=T2.POS_QUIET, speaker=True)
        pre = banks.noise(rng, int(T2.PRE_ROLL_SECONDS * SR))
        pre *= np.sqrt(np.mean(audio[:1600] ** 2) / (np.mean(pre ** 2) + 1e-12))
        audio = np.concatenate([pre, audio]).astype(np.float32)
        start, end = start + len(pre), end + len(pre)
        if rng.random() < own_share:
            audio = over_own(rng, audio, start, end, own, esr_range=esr_range)
        audio = audio[:end + T2.STEP_SAMPLES * (T2.POS_AFTER_STEPS + 2)]
        embs.append(e1data.embed(audio))
        ends.append(e1data.step_at(end))
    return embs, ends


def _neg_worker(args):
    """A stream of pieces (marked ones' ends returned), OWN_SHARE of it with the own sound under it."""
    seed, (pieces, marked, fillers, tg, synthetic, noise_seconds, own_args, own_share, *rest) = args
    esr_range = rest[0] if rest else ESR_RANGE
    rng = np.random.default_rng(seed)
    banks = D.Banks(rng, A.TRAIN_NOISES, 120, fillers)
    pieces = [T2.maybe_voice(rng, p, tg, T2.VOICE_SHARE_NEG) if s else p for p, s in zip(pieces, synthetic)]
    audio, ends, noise_start = D.stream(rng, pieces, banks, noise_seconds, mark=marked, speaker=True)
    if own_share > 0:
        own = Own(rng, *own_args)
        step = 8 * SR
        for a in range(0, len(audio), step):
            if rng.random() < own_share:
                seg = audio[a:a + step]
                e = own.echo(rng, len(seg))
                g = np.sqrt((A.active_power(seg) if np.any(seg) else 1e-4) / (np.mean(e ** 2) + 1e-12))
                audio[a:a + step] = np.clip(seg + e * g * 10 ** (rng.uniform(*esr_range) / 20), -1, 1)
    return e1data.embed(audio), [e1data.step_at(e) for e in ends], e1data.step_at(noise_start)


def _own_worker(args):
    """The own sound alone (room, level, a little training noise), or with a person talking over it. With
    ring_only, crops of RING_RESIDUAL in place of the own sound."""
    seed, (seconds, speech, ring, fillers, talk_share, kinds, *rest) = args
    rng = np.random.default_rng(seed)
    banks = D.Banks(rng, kinds, 60, fillers)
    ring_only = len(rest) > 1 and rest[1]
    own = None if ring_only else Own(rng, speech, ring, max(60, seconds), clean=bool(rest and rest[0]))
    out, n, left = [], int(10 * SR), seconds
    while left > 0:
        e = A.crop(rng, RING_RESIDUAL["ring"], n).astype(np.float32) if ring_only else own.echo(rng, n)
        e = e + banks.noise(rng, n) * np.sqrt(np.mean(e ** 2) / 10 ** (rng.uniform(10, 40) / 10))
        if rng.random() < talk_share:
            f = fillers[rng.integers(len(fillers))][: n - SR]
            t = int(rng.integers(0, n - len(f)))
            talk = np.zeros(n, np.float32)
            talk[t:t + len(f)] = A.reverb(f, A.room_ir(rng))[:len(f)]
            e = e + talk * np.sqrt(np.mean(e ** 2) / (A.active_power(talk) + 1e-12)) * 10 ** (rng.uniform(-20, 20) / 20)
        out.append(A.set_level(rng, e, -40, -3))
        left -= 10
    return e1data.embed(np.concatenate(out))


def _jobs(seed, items, n=e1data.CHUNKS):
    return [(seed + i, items[i::n]) for i in range(n)]


def ragged(path, fn, jobs, procs, label):
    """fn over jobs in worker processes, cached at path (e1data's ragged npz); returns (emb, offsets, extra)."""
    if not os.path.exists(path):
        t = time.time()
        res = e1data.run(fn, jobs, procs)
        if isinstance(res[0], tuple) and len(res[0]) == 2:  # positives: (embs, ends)
            embs = [e for r in res for e in r[0]]
            e1data.save_ragged(path, embs, ends=np.array([e for r in res for e in r[1]]))
        elif isinstance(res[0], tuple):  # streams: (emb, ends, noise_start)
            embs, ends, off = [], [], 0
            for e, en, _ in res:
                embs.append(e)
                ends += [off + x for x in en]
                off += len(e)
            e1data.save_ragged(path, embs, ends=np.array(ends, np.int64))
        else:
            embs = list(res)
            e1data.save_ragged(path, embs)
        print(f"{label}: {sum(len(e) for e in embs) * STEP_SECONDS / 3600:.2f} h embedded in {time.time() - t:.0f} s",
              flush=True)
    return e1data.load_ragged(path)


def stop_sentences(workdir):
    """T2.training_sentences without any saying "stop"."""
    sents = T2.training_sentences(workdir, ["stop"])
    if not sents:
        raise HotPhraseError(os.path.join(workdir, "cache"), "no training sentences: run hotphrase.make_data stop first")
    return sents


def merge(parts):
    """Ragged sets (emb, offsets, ends) as one: embeddings concatenated, each set's ends moved by its offset."""
    emb, offs, ends, base = [], [0], [], 0
    for e, o, en in parts:
        emb.append(e)
        offs += list(np.asarray(o[1:]) + base)
        ends.append(np.asarray(en))
        base += len(e)
    return np.concatenate(emb), np.array(offs, np.int64), np.concatenate(ends)


def data(workdir, procs, real_copies, own_seconds=OWN_SECONDS, own_texts_n=OWN_TEXTS, esr=POS_ESR_RANGE,
         own_share=OWN_SHARE, talk_copies=2, clean_own_seconds=0, ring_seconds=0):
    d = os.path.join(workdir, "stop", "cache")
    os.makedirs(d, exist_ok=True)
    sents = stop_sentences(workdir)
    fillers = sents[:T2.FILLERS]
    tg = T2.voice_targets(workdir, sents)
    cache_texts = os.path.join(d, f"own_voice_train{own_texts_n}.npz")
    if not os.path.exists(cache_texts):
        r = np.random.default_rng(61)
        texts = own_texts("train")
        voice = espeak([texts[i] for i in r.permutation(len(texts))[:own_texts_n]])
        e1data.save_ragged(cache_texts, [v[:, None] for v in voice])
    z = e1data.load_ragged(cache_texts)
    speech = [z[0][a:b, 0].astype(np.float32) for a, b in zip(z[1][:-1], z[1][1:])]
    ring = timer_ring()
    own_args = (speech, ring, 240)
    # positives: synthetic and real
    root = os.path.join(workdir, "stop-real")
    real = [trim_active(D.read_audio(p)) for p, _ in G.files(root, "train")]
    if not real:
        raise HotPhraseError(root, "no real training clips: run hotphrase.get_stop_clips first")
    syn = D.load_clips(os.path.join(workdir, "stop", "pos_train.npz"))[0]
    syn += D.load_clips(os.path.join(workdir, "stop", "pos_train_l2.npz"))[0]
    res = f"_res{RESIDUAL['key']}" if RESIDUAL is not None else ""
    tag = f"_esr{esr[0]:g}_{esr[1]:g}_own{own_share:g}{res}"
    pos_s = ragged(os.path.join(d, f"pos_syn{tag}.npz"), _pos_worker,
                   [(s, (c, fillers, tg, T2.VOICE_SHARE_POS, own_args, esr, own_share)) for s, c in _jobs(100, syn)],
                   procs, "synthetic positives")
    pos_r = ragged(os.path.join(d, f"pos_real{real_copies}{tag}.npz"), _pos_worker,
                   [(s, (c, fillers, tg, 0.0, own_args, esr, own_share)) for s, c in _jobs(150, real * real_copies)],
                   procs, "real positives")
    parts = [(pos_s[0], pos_s[1], pos_s[2]["ends"]), (pos_r[0], pos_r[1], pos_r[2]["ends"])]
    if RESIDUAL is not None and RESIDUAL["talk"] and talk_copies > 0:
        items = [(f, a, b) for f, spans in RESIDUAL["talk"] for a, b in spans]
        pos_t = ragged(os.path.join(d, f"pos_talk{len(items)}x{talk_copies}{res}.npz"), _talk_worker,
                       [(s, (c, talk_copies)) for s, c in _jobs(170, items)], procs, "real positives through the canceller")
        parts.append((pos_t[0], pos_t[1], pos_t[2]["ends"]))
    pos = merge(parts)
    # confusables: synthetic and the real other words
    conf = D.load_clips(os.path.join(workdir, "stop", "conf_train.npz"))[0]
    conf += D.load_clips(os.path.join(workdir, "stop", "conf_train_l2.npz"))[0]
    others = [trim_active(D.read_audio(p)) for w in G.words(root) if w != "stop" for p, _ in G.files(root, "train", w)]
    c_syn = ragged(os.path.join(d, f"conf_syn{tag}.npz"), _neg_worker,
                   [(s, (p, set(range(len(p))), fillers, tg, [True] * len(p), 0, own_args, own_share, esr))
                    for s, p in _jobs(300, conf + conf)], procs, "synthetic confusables")
    c_real = ragged(os.path.join(d, f"conf_real{tag}.npz"), _neg_worker,
                    [(s, (p, set(range(len(p))), fillers, tg, [False] * len(p), 0, own_args, own_share, esr))
                     for s, p in _jobs(350, others + others)], procs, "real other words")
    conf_e, _, conf_ends = merge([(c_syn[0], c_syn[1], c_syn[2]["ends"]), (c_real[0], c_real[1], c_real[2]["ends"])])
    # negatives: recipe e1's shared kinds (this word's own cache), the own sound alone and talked over
    shared = os.path.join(d, "neg_shared.npz")
    if not os.path.exists(shared):
        real_sp = [x for x, _, _ in D.real_speech("train")]
        pieces = sents + real_sp
        syn_flags = [True] * len(sents) + [False] * len(real_sp)
        jobs = T2.neg_jobs(200, pieces, set(), fillers, tg, syn_flags, 1200)
        jobs = [(s, args + (own_args, 0.25)) for s, args in jobs]
        ragged(shared, _neg_worker, jobs, procs, "shared negatives")
    z = e1data.load_ragged(shared)
    neg_shared = z[0]
    own = ragged(os.path.join(d, f"neg_own{own_texts_n}_{own_seconds}{res}.npz"), _own_worker,
                 [(600 + i, (own_seconds // e1data.CHUNKS, speech, ring, fillers, 0.3, A.TRAIN_NOISES)) for i in range(e1data.CHUNKS)],
                 procs, "own sound")
    negs = [neg_shared, own[0]]
    if RESIDUAL is not None and clean_own_seconds > 0:
        # beside the residual, the own sound as it plays (a room, no canceller): v8 (residual only) fired on the
        # plain ring and on its own voice, which a canceller still converging passes nearly whole
        negs.append(ragged(os.path.join(d, f"neg_own{own_texts_n}_{clean_own_seconds}_clean.npz"), _own_worker,
                           [(650 + i, (clean_own_seconds // e1data.CHUNKS, speech, ring, fillers, 0.3,
                                       A.TRAIN_NOISES, True)) for i in range(e1data.CHUNKS)],
                           procs, "own sound as it plays")[0])
    if RING_RESIDUAL is not None and ring_seconds > 0:
        # the canceller's output over the ring alone: v9, which saw the ring's residual only as a tenth of the own
        # sound and a minute of each room, stopped itself over it, most often as a ring started
        negs.append(ragged(os.path.join(d, f"neg_ring_{ring_seconds}_res{RING_RESIDUAL['key']}.npz"), _own_worker,
                           [(680 + i, (ring_seconds // e1data.CHUNKS, speech, ring, fillers, 0.3, A.TRAIN_NOISES,
                                       False, True)) for i in range(e1data.CHUNKS)],
                           procs, "the canceller's output over the ring alone")[0])
    # the sampler's "noise alone" share: the own sound (negative coordinates)
    noise = [(len(neg_shared), sum(len(n) for n in negs))]
    return pos, (conf_e, conf_ends), np.concatenate(negs), noise, (speech, ring, fillers)


def own_eval(workdir, procs):
    """Held-out own sound for the threshold: other sentences, other rooms, alone (the self-stop measure's kind)."""
    d = os.path.join(workdir, "stop", "cache")
    cache = os.path.join(d, "own_voice_eval.npz")
    if not os.path.exists(cache):
        r = np.random.default_rng(62)
        texts = own_texts("eval")
        voice = espeak([texts[i] for i in r.permutation(len(texts))[:300]])
        e1data.save_ragged(cache, [v[:, None] for v in voice])
    z = e1data.load_ragged(cache)
    speech = [z[0][a:b, 0].astype(np.float32) for a, b in zip(z[1][:-1], z[1][1:])]
    fillers = [x * 0.1 for x in speech[:50]]  # the eval noises' babble
    return ragged(os.path.join(d, "own_eval.npz"), _own_worker,
                  [(700 + i, (EVAL_OWN_SECONDS // e1data.CHUNKS, speech, timer_ring(), fillers, 0.0,
                                A.EVAL_NOISES))
                   for i in range(e1data.CHUNKS)], procs, "held-out own sound")


def detections(scores, thr, refractory_steps):
    n, last = 0, -10 ** 9
    for i in np.nonzero(scores >= thr)[0]:
        if i - last >= refractory_steps:
            n += 1
            last = i
    return n


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("workdir")
    ap.add_argument("--out")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--frames", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--real-copies", type=int, default=16, help="augmented passes over each real training clip")
    ap.add_argument("--label-smoothing", type=float, default=0.05)
    ap.add_argument("--own-hours", type=float, default=OWN_SECONDS / 3600, help="the own sound among the negatives")
    ap.add_argument("--own-texts", type=int, default=OWN_TEXTS, help="training sentences the own voice reads")
    ap.add_argument("--esr", type=float, nargs=2, default=list(POS_ESR_RANGE), metavar=("LO", "HI"),
                    help="echo-to-speech ratios (dB) of the positives and confusables heard over the own sound")
    ap.add_argument("--own-share", type=float, default=OWN_SHARE,
                    help="share of the positives and confusables heard over the own sound")
    ap.add_argument("--residual", help="the canceller's output over the own sound (hound-speaker-bench aec ... --only "
                    "dump --dump-dir DIR): the own sound under the positives and among the negatives, for the synthetic echo")
    ap.add_argument("--talk-copies", type=int, default=2, help="crops of each phrase in --residual's realvg* files "
                    "(a person over the own sound through the canceller) among the positives; 0: none")
    ap.add_argument("--clean-own-hours", type=float, default=0.0, help="with --residual, also this much of the own "
                    "sound as it plays (no canceller) among the negatives")
    ap.add_argument("--ring-residual", help="the canceller's output over the ring alone (the dump of a room set made "
                    "with aec_room --own-ring-share 1), --ring-hours of it among the negatives")
    ap.add_argument("--ring-hours", type=float, default=0.0, help="with --ring-residual: how much of it")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args(argv)
    if a.clean_own_hours and (a.clean_own_hours < 0 or not a.residual):
        ap.error(f"--clean-own-hours {a.clean_own_hours:g}: hours of the own sound as it plays beside --residual's "
                 "(without --residual all the own sound is as it plays)")
    if (a.ring_hours != 0 or a.ring_residual) and (a.ring_hours <= 0 or not a.ring_residual):
        ap.error(f"--ring-hours {a.ring_hours:g} and --ring-residual {a.ring_residual}: both, and more than 0 hours")
    global RESIDUAL, RING_RESIDUAL
    if a.residual:
        RESIDUAL = load_residual(a.residual)
    if a.ring_residual:
        RING_RESIDUAL = load_ring_residual(a.ring_residual)
    t0 = time.time()
    pos, conf, neg, noise, _ = data(a.workdir, a.procs, a.real_copies, int(a.own_hours * 3600), a.own_texts,
                                    tuple(a.esr), a.own_share, a.talk_copies, int(a.clean_own_hours * 3600),
                                    int(a.ring_hours * 3600))
    s = T2.Sampler(a.frames, pos, conf, neg, noise, a.seed)
    print(f"training windows: {len(s.pos_end)} positives, {len(s.conf_end)} confusable ends, "
          f"{len(s.neg_any) * STEP_SECONDS / 3600:.2f} h of negatives", flush=True)
    import keras
    keras.utils.set_random_seed(a.seed)
    m = T2.build_head(a.frames, a.hidden, a.layers)
    sched = keras.optimizers.schedules.CosineDecay(1e-3, a.steps, alpha=0.01)
    m.compile(optimizer=keras.optimizers.AdamW(sched, weight_decay=1e-2),
              loss=keras.losses.BinaryCrossentropy(label_smoothing=a.label_smoothing))

    def predict(x):
        return m.predict_on_batch(x).reshape(-1)

    def remine():
        worst = s.mine(predict, T2.MINED)
        return len(s.mined), worst
    training.fit(m, s, a.steps, a.batch, 1000, remine)
    out = a.out or os.path.join(a.workdir, "stop", "head")
    os.makedirs(out, exist_ok=True)
    meta = {"phrase": "stop", "frames": a.frames, "smoothing": SMOOTHING, "threshold": 0.5,
            "refractory_seconds": REFRACTORY_SECONDS,
            "training": {"recipe": "stop (issue #61): e1 with real clips and the own sound", "steps": a.steps,
                         "batch": a.batch, "hidden": a.hidden, "layers": a.layers, "seed": a.seed,
                         "real_copies": a.real_copies, "label_smoothing": a.label_smoothing,
                         "own_hours": a.own_hours, "own_texts": a.own_texts, "esr": a.esr,
                         "own_share": a.own_share, "residual": a.residual, "talk_copies": a.talk_copies,
                         "clean_own_hours": a.clean_own_hours, "ring_residual": a.ring_residual,
                         "ring_hours": a.ring_hours,
                         "real_training_clips": int(len(G.files(os.path.join(a.workdir, "stop-real"), "train"))),
                         "positive_clips": int(len(s.pos_end)),
                         "negative_hours": round(len(s.neg_any) * STEP_SECONDS / 3600, 2),
                         "sources": [G.LICENCE, "synthetic voices (hotphrase.make_data)", "espeak-ng, the speaker's ring"]}}
    head = T2.export(m, a.layers, out, meta)
    # the threshold: the held-out own sound's highest smoothed score, never below 0.5
    ev, off, _ = own_eval(a.workdir, a.procs)
    _, arrays = E.load_head(out)
    best, hours = 0.0, len(ev) * STEP_SECONDS / 3600
    scores = []
    for i in range(len(off) - 1):
        sc, _ = E.head_scores(head, arrays, ev[off[i]:off[i + 1]].astype(np.float32))
        scores.append(sc)
        best = max(best, float(sc.max()) if len(sc) else 0.0)
    thr = float(min(0.99, max(0.5, best + 0.02)))
    head["threshold"] = round(thr, 4)
    with open(os.path.join(out, "head.json"), "w") as f:
        json.dump(head, f, indent=1)
    ref = int(REFRACTORY_SECONDS / STEP_SECONDS)
    report = {"own_eval_hours": round(hours, 3), "own_eval_max_score": best, "threshold": thr,
              "own_eval_detections": {f"{t:.2f}": sum(detections(sc, t, ref) for sc in scores)
                                      for t in (0.5, 0.6, 0.7, 0.8, 0.9)},
              "seconds": round(time.time() - t0)}
    with open(os.path.join(out, "own.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    import sys
    sys.exit(main())
