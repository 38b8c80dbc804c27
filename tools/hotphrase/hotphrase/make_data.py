"""Step 1: synthesize the base clips (no augmentation yet).

  python -m hotphrase.make_data PHRASE WORKDIR [--positives N] [--confusables N] [--sentences N]

Writes WORKDIR/PHRASE/{pos,conf}_{train,eval}.npz and {pos,conf}_train_l2.npz, and WORKDIR/cache/sent_{train,eval}.npz,
sent_train_piper.npz and sent_train_l2.npz (sentences are shared by every phrase; ones containing the phrase's
words are dropped when used). Training clips come from the training voices only (the *_l2 files from the
accented-English voices, synth.L2_LANGS), evaluation clips from the held-out voices only.
"""
import os
import random
import sys
import time
# Not multiprocessing.Pool: when the kernel kills one of its workers (out of memory), Pool.map waits forever;
# the executor raises BrokenProcessPool instead, so a run fails rather than hangs.
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from . import cli
from . import synth
from .constants import INT16_MAX
from .phrases import PHRASES


def save(path, clips, meta):
    lens = np.array([len(c) for c in clips], np.int64)
    audio = np.concatenate(clips) if clips else np.zeros(0, np.float32)
    np.savez(path, audio=(np.clip(audio, -1, 1) * INT16_MAX).astype(np.int16), offsets=np.concatenate([[0], np.cumsum(lens)]),
             meta=np.array(meta))


def run_jobs(jobs, procs):
    chunks = [jobs[i:i + 40] for i in range(0, len(jobs), 40)]
    with ProcessPoolExecutor(procs) as p:
        res = list(p.map(synth.synth_batch, chunks))
    clips, meta = [], []
    for chunk, out in zip(chunks, res):
        for j, x in zip(chunk, out):
            x = synth.trim(x)
            if len(x) >= 1600:  # a failed or empty synthesis is dropped, not kept as silence
                clips.append(x)
                meta.append(f"{j[0]}:{j[1]}|{j[2]}|{j[3]:.2f}|{j[4]:.2f}")
    return clips, meta


def make(kind, texts, n, split, seed, procs, engines=None, vs=None):
    rng = random.Random(seed)
    vs = vs or [v for v in synth.voices(split) if engines is None or v[0] in engines]
    jobs = [synth.job(rng, synth.pick_voice(rng, vs), rng.choice(texts)) for _ in range(n)]
    t = time.time()
    clips, meta = run_jobs(jobs, procs)
    print(f"  {kind} {split}: {len(clips)}/{n} clips from {len(set(m.split('|')[0] for m in meta))} voices "
          f"in {time.time() - t:.0f} s", flush=True)
    return clips, meta


def make_file(path, kind, texts, n, split, seed, procs, **voices):
    """Writes make(...)'s clips to `path`, unless the file is there already (so a work directory can be completed,
    and one data set shared by several runs) or no clips are asked for."""
    if os.path.exists(path):
        print(f"  {path} exists, kept", flush=True)
    elif n:
        save(path, *make(kind, texts, n, split, seed, procs, **voices))


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("phrase", choices=sorted(PHRASES))
    ap.add_argument("workdir")
    ap.add_argument("--positives", type=int, default=4000)
    ap.add_argument("--confusables", type=int, default=3000)
    ap.add_argument("--eval-positives", type=int, default=600)
    ap.add_argument("--eval-confusables", type=int, default=1000)
    ap.add_argument("--sentences", type=int, default=7000)
    ap.add_argument("--eval-sentences", type=int, default=3500)
    ap.add_argument("--piper-sentences", type=int, default=1500,
                    help="training sentences from the piper voice (a separate cache file: it is 20 times slower)")
    ap.add_argument("--piper-weight", type=float, default=synth.ENGINE_WEIGHTS["piper"],
                    help="the piper voice's engine weight for the training clips (hotphrase/synth.py: ENGINE_WEIGHTS)")
    ap.add_argument("--l2-positives", type=int, default=1000, help="accented-English training positives (synth.L2_LANGS)")
    ap.add_argument("--l2-confusables", type=int, default=750)
    ap.add_argument("--l2-sentences", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args(argv)
    synth.ENGINE_WEIGHTS["piper"] = a.piper_weight
    ph = PHRASES[a.phrase]
    out = os.path.join(a.workdir, a.phrase)
    cache = os.path.join(a.workdir, "cache")
    os.makedirs(out, exist_ok=True)
    os.makedirs(cache, exist_ok=True)
    print(f"voices: {len(synth.voices('train'))} training, {len(synth.voices('eval'))} held out", flush=True)
    for split, npos, nconf, seed in (("train", a.positives, a.confusables, 1), ("eval", a.eval_positives,
                                                                                 a.eval_confusables, 2)):
        make_file(os.path.join(out, f"pos_{split}.npz"), "pos", ph["texts"], npos, split, seed * 10 + 1, a.procs)
        make_file(os.path.join(out, f"conf_{split}.npz"), "conf", ph["confusables"], nconf, split, seed * 10 + 2,
                  a.procs)
    sents = synth.sentences()
    half = len(sents) // 2  # training and evaluation sentences are different texts, too
    # without piper: the neural voice takes 1-2 s of CPU per sentence; its sentences are made below
    debian = {"espeak", "flite", "festival"}
    make_file(os.path.join(cache, "sent_train.npz"), "sentences", sents[:half], a.sentences, "train", 31, a.procs,
              engines=debian)
    make_file(os.path.join(cache, "sent_eval.npz"), "sentences", sents[half:], a.eval_sentences, "eval", 32,
              a.procs, engines=debian)
    # The piper voice's own negatives (shorter sentences to save time), so that its voice is no cue for the phrase.
    short = [s for s in sents[:half] if len(s.split()) <= 12]
    make_file(os.path.join(cache, "sent_train_piper.npz"), "piper sentences", short, a.piper_sentences, "train", 33,
              a.procs, engines={"piper"})
    # Accented English, training only: positives, confusables and sentences alike, so an accent is no cue.
    l2 = synth.l2_voices()
    make_file(os.path.join(out, "pos_train_l2.npz"), "l2 pos", ph["texts"], a.l2_positives, "train", 41, a.procs,
              vs=l2)
    make_file(os.path.join(out, "conf_train_l2.npz"), "l2 conf", ph["confusables"], a.l2_confusables, "train", 42,
              a.procs, vs=l2)
    make_file(os.path.join(cache, "sent_train_l2.npz"), "l2 sentences", sents[:half], a.l2_sentences, "train", 43,
              a.procs, vs=l2)

if __name__ == "__main__":
    sys.exit(main())
