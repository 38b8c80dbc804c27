"""Format 2's honest evaluation (recipe e1, hotphrase.evaluate --format 2): the head in WORKDIR/PHRASE/e1 through
the reference inference (hotphrase/embedding.py).

  python -m hotphrase.evaluate PHRASE WORKDIR --format 2 [--head DIR ...] [--out FILE] [--no-synthetic]
                               [--set-threshold] [--extra-eval DIR ...]

Several --head folders (heads trained on the same embeddings, e.g. other seeds) are scored as one detector whose
score is the mean of theirs (an ensemble); its report goes to --out (default: eval_ensemble.json in the first).

Reports (WORKDIR/PHRASE/e1/eval.json):
  - false accepts per hour over the negatives, and the thresholds for 0.1 and 0.5 per hour. The negatives are
    every recording training never used: held-out voices reading held-out sentences in held-out noise families
    (as evaluate_format1.py), an hour of those noises, music and babble alone, the real-speech folders' EVALUATION
    speakers (split by speaker from the training ones), and every real recording of the other three keywords;
  - false accepts per hour on the real-speech evaluation speakers alone;
  - the recipe check (computer, jarvis, snowboy, view glass): misses on all real recordings of the phrase at 0.1
    and 0.5 false accepts per hour, and by speaking time and by pitch;
  - with --extra-eval: false accepts per hour on each of those folders of held-out public recordings
    (get_public_negatives.py), reported apart and not used for the thresholds above, so that those numbers stay
    comparable with earlier runs; and, apart again ("with_extra_eval"), thresholds from all negatives together
    and the real recordings missed at them;
  - unless --no-synthetic: held-out synthetic positives at 0, 5, 10, 20 dB and 1,000 held-out confusables,
    drawn exactly as evaluate_format1.py draws them (the same audio v9 was measured on).
Each recording is scored on its own (its false accepts and its hours summed), so the embedded sets are cached in
WORKDIR/cache/e1_eval_*.npz and shared by every phrase and head. Below, first the sets (each made once), then one
function per section of the report, in the order main calls them.
"""
import json
import os
import time
import zlib

import numpy as np

from . import augment as A
from . import dataset as D
from . import e1data
from . import embedding as E
from . import heldout, voices
from .constants import EVAL_CONFUSABLES, EVAL_SNRS_DB, FA_PER_HOUR_HIGH, FA_PER_HOUR_LOW, FOUND_WITHIN_SECONDS
from .constants import SAMPLE_RATE as SR
from .constants import SPEAKING_TIME_BINS, STEP_SAMPLES
from .errors import HotPhraseError
from .phrases import PHRASES

STEP_S = STEP_SAMPLES / SR  # 0.08 s
REAL_WORDS = ["computer", "jarvis", "snowboy", "view-glass"]
EVAL_NOISE_SECONDS = 2700  # noise, music and babble alone (the four evaluation families, a quarter each)
# Every second held-out sentence (about 2.2 h): with the noise, the real-speech evaluation speakers (0.66 h) and
# the other three keywords' real recordings (1.5 h) that makes 5 h, in the CPU time this machine has.
EVAL_SENTENCE_STRIDE = 2
SYNTHETIC_STREAMS = 16  # the held-out sentences in 16 streams, scored separately (a false accept never straddles two)
REAL_STREAMS = 8  # real recordings (the real-speech evaluation speakers, --extra-eval folders) in up to 8 streams
REAL_QUIET = (1.0, (35, 50))  # real recordings as they are, with a little held-out noise between them
PITCH_BINS = ((0, 140), (140, 180), (180, 230), (230, 1000))
# Fine steps: a head trained with label smoothing keeps its scores below about 0.97.
GRID = np.unique(np.concatenate([np.round(np.linspace(0.05, 0.999, 950), 4), 1 - np.logspace(-3, -7, 81)]))
FIXED_THRESHOLDS = (0.5, 0.9, 0.99, 0.999)  # the recipe check also at these, for comparing heads
EXTRA_FIXED_THRESHOLDS = (0.5, 0.9)  # --extra-eval folders' false accepts also at these
FAN_BANK_SECONDS = 60  # the real keyword recordings' lead-ins come from this much held-out fan noise
CONFUSABLE_SNR_DB = (10, 20)


def _embed_worker(args):
    _, clips = args
    return [e1data.embed(c) for c in clips]


def embed_all(clips, procs):
    """Embeddings of each clip, in order."""
    jobs = e1data.split_jobs(0, list(range(len(clips))))
    res = e1data.run(_embed_worker, [(s, [clips[i] for i in idx]) for s, idx in jobs], procs)
    out = [None] * len(clips)
    for (_, idx), embs in zip(jobs, res):
        for i, e in zip(idx, embs):
            out[i] = e
    return out


def cached(path, make):
    """{name: list of embeddings}, plus saved extras, made once."""
    if not os.path.exists(path):
        t = time.time()
        embs, extra = make()
        e1data.save_ragged(path, embs, **extra)
        print(f"  {os.path.basename(path)}: {len(embs)} recordings, {sum(len(e) for e in embs) * STEP_S / 3600:.2f} h "
              f"embedded in {time.time() - t:.0f} s", flush=True)
    emb, off, extra = e1data.load_ragged(path)
    return [emb[off[i]:off[i + 1]] for i in range(len(off) - 1)], extra


def eval_banks(workdir, words=None):
    """evaluate_format1.py's noise banks and held-out sentences (without `words`, default every phrase's), drawn in the
    same order from the same seed (heldout.py)."""
    rng = heldout.rng()
    sents = heldout.sentences(workdir, e1data.phrase_free if words is None else heldout.without_words(words))
    banks = heldout.banks(rng, sents)
    return rng, banks, sents


def negative_sets(workdir, procs):
    """The phrase-independent negatives: (held-out sentences + noise alone, real-speech evaluation speakers)."""
    def make_synthetic():
        rng, banks, sents = eval_banks(workdir)
        pieces = sents[heldout.NEGATIVES_FROM::EVAL_SENTENCE_STRIDE]
        streams = []
        for i in range(SYNTHETIC_STREAMS):
            speech, _, _ = heldout.negative_speech(rng, pieces[i::SYNTHETIC_STREAMS], banks)
            streams.append(speech)
        for kind in A.EVAL_NOISES:
            n = int(EVAL_NOISE_SECONDS / len(A.EVAL_NOISES) * SR)
            streams.append(heldout.noise_level(rng, np.resize(banks.b[kind], n)))
        return embed_all(streams, procs), {"speech_streams": np.array(SYNTHETIC_STREAMS)}

    def make_real_speech():
        rng, banks, _ = eval_banks(workdir)
        rs = D.real_speech("eval")
        # the recordings as they are (real rooms and microphones), with a little of a held-out noise between them
        streams = [D.stream(rng, [x for x, _, _ in rs[i::REAL_STREAMS]], banks, 0, quiet=REAL_QUIET)[0]
                   for i in range(REAL_STREAMS)]
        return embed_all(streams, procs), {"speakers": np.array(len({s for _, s, _ in rs}))}

    c = os.path.join(workdir, "cache")
    syn, _ = cached(os.path.join(c, "e1_eval_neg_synthetic.npz"), make_synthetic)
    real, rx = cached(os.path.join(c, "e1_eval_neg_realspeech.npz"), make_real_speech)
    return syn, real, int(rx["speakers"])


def extra_eval_files(workdir, folder):
    """(the recordings under an extra folder, sorted; the cache's tag: a hash of their paths under workdir)."""
    import hashlib
    files = sorted(os.path.join(r, n) for r, _, ns in os.walk(folder) for n in ns
                   if n.lower().endswith((".flac", ".wav")))
    if not files:
        raise HotPhraseError(folder, "no .flac or .wav files in it")
    return files, hashlib.sha1("\n".join(os.path.relpath(f, workdir) for f in files).encode()).hexdigest()[:10]


def extra_eval_set(workdir, folder, procs):
    """The recordings under an extra folder (get_public_negatives.py's WORKDIR/public/eval/SOURCE: speakers and
    noise never trained on), as they are, in up to 8 streams with a little held-out noise between them (as the
    real-speech evaluation speakers); cached by a hash of the file list."""
    files, tag = extra_eval_files(workdir, folder)

    def make():
        rng, banks, _ = eval_banks(workdir)
        clips = [D.read_audio(f) for f in files]
        n = min(REAL_STREAMS, len(clips))
        streams = [D.stream(rng, clips[i::n], banks, 0, quiet=REAL_QUIET)[0] for i in range(n)]
        return embed_all(streams, procs), {"files": np.array(len(files))}
    return cached(os.path.join(workdir, "cache", f"e1_eval_extra_{tag}.npz"), make)[0]


def real_keyword_set(workdir, word, procs):
    """Every real recording of `word` with a lead-in of held-out fan noise at its own noise floor (as
    evaluate_format1.py), embedded; with each clip's speaking time and median pitch."""
    def make():
        rng = np.random.default_rng(zlib.crc32(word.encode()))
        fan = A.make_bank(rng, "fan", FAN_BANK_SECONDS)
        clips = D.real_clips(word, None)
        audio = []
        for x in clips:
            lead = A.crop(rng, fan, int(heldout.REAL_LEAD_SECONDS * SR))
            lead = lead * np.sqrt(np.mean(x[:800] ** 2) + 1e-10) / (np.sqrt(np.mean(lead ** 2)) + 1e-9)
            tail = np.zeros(int(heldout.REAL_TAIL_SECONDS * SR), np.float32)
            audio.append(np.concatenate([lead, x, tail]).astype(np.float32))
        pitch = [voices.measure_pitch(x) for x in clips]
        return embed_all(audio, procs), {"speaking": np.array([D.active_seconds(x) for x in clips]),
                                         "pitch": np.array([p or 0.0 for p in pitch])}
    return cached(os.path.join(workdir, "cache", f"e1_eval_real_{word}.npz"), make)


def synthetic_positive_set(workdir, phrase, procs, limit):
    """Held-out positives at 0, 5, 10, 20 dB and the held-out confusables, drawn as evaluate_format1.py draws them."""
    def make():
        rng, banks, sents = eval_banks(workdir, PHRASES[phrase]["words"])
        # evaluate_format1.py draws its negative stream and levels its four noise stretches first; the same calls keep
        # its random sequence, so these are the very clips v9 was measured on
        words = PHRASES[phrase]["words"]
        heldout.negative_speech(rng, sents[heldout.NEGATIVES_FROM:] + heldout.v9_real_negatives(words), banks)
        for _ in A.EVAL_NOISES:  # its noise stretches are longer than the banks: np.resize, then one level draw
            rng.uniform(*heldout.NOISE_DBFS)
        fillers = heldout.fillers(sents)
        pos = D.load_clips(os.path.join(workdir, phrase, "pos_eval.npz"))[0][:limit]
        conf = D.load_clips(os.path.join(workdir, phrase, "conf_eval.npz"))[0][:EVAL_CONFUSABLES]
        audio, ends = [], []
        for snr in EVAL_SNRS_DB:
            for c in pos:
                a, _, end = D.positive(rng, c, banks, fillers, snr=snr)
                audio.append(a)
                ends.append(end)
        for c in conf:
            a, _, _ = D.positive(rng, c, banks, fillers, snr=rng.uniform(*CONFUSABLE_SNR_DB))
            audio.append(a)
            ends.append(-1)
        return embed_all(audio, procs), {"ends": np.array(ends), "positives": np.array(len(pos))}
    return cached(os.path.join(workdir, phrase, "e1", "eval_synthetic.npz"), make)


class Scorer:
    """One head's scores, or with several heads the mean of their scores (the mean of smoothed outputs is the
    smoothed mean, so this is one detector averaging the heads' outputs step by step)."""

    def __init__(self, heads):
        self.heads = heads
        head = heads[0][0]
        for h, _ in heads[1:]:
            if (h["frames"], h["smoothing"], h["refractory_seconds"]) != (head["frames"], head["smoothing"],
                                                                            head["refractory_seconds"]):
                raise HotPhraseError(h.get("phrase", "head"), "an ensemble's heads must share frames, smoothing "
                                     "and refractory period")
        self.refr = int(round(head["refractory_seconds"] / STEP_S))

    def scores(self, emb):
        emb = emb.astype(np.float32)
        return np.mean([E.head_scores(h, a, emb)[0] for h, a in self.heads], axis=0)

    def fa_counts(self, score_list, grid):
        return np.array([sum(len(E.detections(s, t, self.refr)) for s in score_list) for t in grid])


def threshold_for(grid, fa_per_hour, target):
    ok = grid[fa_per_hour <= target]
    return float(ok.min()) if len(ok) else 1.0


def by_bins(values, missed, bins, fmt):
    out = {}
    for lo, hi in bins:
        sel = (values >= lo) & (values < hi)
        if sel.any():
            out[fmt.format(lo, hi)] = {"clips": int(sel.sum()), "missed": round(float(missed[sel].mean()), 4)}
    return out


class Negatives:
    """Section 1, false accepts per hour: every negative set's false accepts on the grid, the thresholds for 0.1 and
    0.5 per hour from all of them, and the real-speech evaluation speakers alone at those."""

    def __init__(self, sc, parts, n_spk):
        self.fa, self.hours = {}, {}
        for name, embs in parts.items():
            s = [sc.scores(e) for e in embs]
            self.fa[name] = sc.fa_counts(s, GRID)
            self.hours[name] = sum(len(e) for e in embs) * STEP_S / 3600
        self.total_h = total_h = sum(self.hours.values())
        curve = sum(self.fa.values()) / total_h
        self.thr01 = threshold_for(GRID, curve, FA_PER_HOUR_LOW)
        self.thr05 = threshold_for(GRID, curve, FA_PER_HOUR_HIGH)
        rs_fa, rs_h = self.fa["real_speech_eval_speakers"], self.hours["real_speech_eval_speakers"]
        rs_curve = rs_fa / rs_h
        i01, i05 = int(np.searchsorted(GRID, self.thr01)), int(np.searchsorted(GRID, self.thr05))
        self.report = {"hours": round(total_h, 2), "parts_hours": {k: round(v, 3) for k, v in self.hours.items()},
                       "threshold_at_0.1_fa_per_hour": self.thr01, "threshold_at_0.5_fa_per_hour": self.thr05}
        self.real_speech = {"hours": round(rs_h, 3), "speakers": n_spk,
                            "fa_per_hour_at_0.1_threshold": round(float(rs_curve[i01]), 3) if i01 < len(GRID) else 0.0,
                            "fa_per_hour_at_0.5_threshold": round(float(rs_curve[i05]), 3) if i05 < len(GRID) else 0.0,
                            "false_accepts_at_0.1_threshold": int(rs_fa[i01]) if i01 < len(GRID) else 0}
        print(f"negatives {total_h:.2f} h ({', '.join(f'{k} {v:.2f}' for k, v in self.hours.items())}): threshold "
              f"{self.thr01} for 0.1 FA/h, {self.thr05} for 0.5 FA/h; real speech alone ({rs_h:.2f} h, "
              f"{n_spk} speakers): {self.real_speech['false_accepts_at_0.1_threshold']} false accepts at the "
              f"0.1 FA/h threshold", flush=True)


def extra_eval(sc, workdir, folders, procs, neg):
    """Section 2 (--extra-eval): false accepts on each folder of held-out public recordings at the thresholds the
    usual negatives set, and, apart, a second pair of thresholds from all negatives together (a larger and more
    real negative set; the first pair stays comparable with earlier runs). Returns (the folders' report, the
    second pair's report, {"0.1": threshold, "0.5": threshold})."""
    report = {}
    fa_all, h_all = sum(neg.fa.values()), neg.total_h
    for folder in folders:
        embs = extra_eval_set(workdir, folder, procs)
        h = sum(len(e) for e in embs) * STEP_S / 3600
        scored = [sc.scores(e) for e in embs]
        fa_all, h_all = fa_all + sc.fa_counts(scored, GRID), h_all + h
        fx = sc.fa_counts(scored, np.array([neg.thr01, neg.thr05, *EXTRA_FIXED_THRESHOLDS]))
        name = os.path.relpath(folder, workdir)
        report[name] = {"hours": round(h, 3), "false_accepts_at_0.1_threshold": int(fx[0]),
                        "false_accepts_at_0.5_threshold": int(fx[1]),
                        "fa_per_hour_at_0.1_threshold": round(fx[0] / h, 3),
                        "fa_per_hour_at_0.5_threshold": round(fx[1] / h, 3),
                        "fa_per_hour_at_fixed_0.5": round(fx[2] / h, 3),
                        "fa_per_hour_at_fixed_0.9": round(fx[3] / h, 3)}
        print(f"held-out {name} ({h:.2f} h): {fx[0]} false accepts at the 0.1 FA/h threshold, {fx[1]} at the "
              f"0.5 FA/h one ({fx[1] / h:.2f} per hour)", flush=True)
    curve_all = fa_all / h_all
    thr_all = {"0.1": threshold_for(GRID, curve_all, FA_PER_HOUR_LOW),
               "0.5": threshold_for(GRID, curve_all, FA_PER_HOUR_HIGH)}
    with_extra = {"hours": round(h_all, 2), "threshold_at_0.1_fa_per_hour": thr_all["0.1"],
                  "threshold_at_0.5_fa_per_hour": thr_all["0.5"]}
    print(f"all negatives with the held-out public recordings, {h_all:.2f} h: threshold {thr_all['0.1']} for 0.1 "
          f"FA/h, {thr_all['0.5']} for 0.5 FA/h", flush=True)
    return report, with_extra, thr_all


def recipe_check(sc, head, word, recordings, neg, thr_all, with_extra):
    """Section 3, the recipe check: every real recording of the phrase, missed or not at the operating points, by
    speaking time and by pitch, and at fixed thresholds; with --extra-eval also at the thresholds of all negatives
    (added to `with_extra`)."""
    embs, extra = recordings
    best = np.array([sc.scores(e).max() if len(e) >= head["frames"] else 0.0 for e in embs])
    rep = {"clips": len(embs)}
    for name, thr in (("0.1", neg.thr01), ("0.5", neg.thr05)):
        missed = best < thr
        rep[f"missed_at_{name}_fa_per_hour"] = round(float(missed.mean()), 4)
        rep[f"by_speaking_time_at_{name}"] = by_bins(extra["speaking"], missed, SPEAKING_TIME_BINS, "{:.2f}-{:.2f}s")
        rep[f"by_pitch_at_{name}"] = by_bins(extra["pitch"], missed, PITCH_BINS, "{:.0f}-{:.0f}Hz")
    rep["at_fixed_thresholds"] = {str(t): round(float(np.mean(best < t)), 4) for t in FIXED_THRESHOLDS}
    if thr_all:
        for name, thr in thr_all.items():
            with_extra[f"real_missed_at_{name}_fa_per_hour"] = round(float(np.mean(best < thr)), 4)
        print(f"REAL '{word}' at the thresholds of all {with_extra['hours']} h of negatives: missed "
              f"{with_extra['real_missed_at_0.5_fa_per_hour']:.3f} at 0.5 FA/h, "
              f"{with_extra['real_missed_at_0.1_fa_per_hour']:.3f} at 0.1 FA/h", flush=True)
    print(f"REAL '{word}': missed {rep['missed_at_0.5_fa_per_hour']:.3f} at 0.5 FA/h, "
          f"{rep['missed_at_0.1_fa_per_hour']:.3f} at 0.1 FA/h ({len(embs)} clips)", flush=True)
    print(f"  by speaking time (0.5 FA/h): {rep['by_speaking_time_at_0.5']}", flush=True)
    print(f"  by pitch (0.5 FA/h): {rep['by_pitch_at_0.5']}", flush=True)
    return rep


def synthetic(sc, head, sets, neg):
    """Section 4 (not with --no-synthetic): held-out synthetic positives at each SNR, missed unless found within
    300 ms of the phrase's end, and the held-out confusables that fire. Returns (misses, confusables)."""
    embs, extra = sets
    n = int(extra["positives"])
    ends = extra["ends"]
    misses = {}
    for k, snr in enumerate(EVAL_SNRS_DB):
        best = []
        for e, end in zip(embs[k * n:(k + 1) * n], ends[k * n:(k + 1) * n]):
            s = sc.scores(e)
            at = np.array([E.step_end_sample(j) for j in range(head["frames"] - 1, len(e))])
            win = (at >= end) & (at <= end + int(FOUND_WITHIN_SECONDS * SR))
            best.append(float(s[win].max()) if win.any() else 0.0)
        best = np.array(best)
        misses[f"{snr}dB"] = {"at_0.1_fa_per_hour": round(float(np.mean(best < neg.thr01)), 4),
                              "at_0.5_fa_per_hour": round(float(np.mean(best < neg.thr05)), 4)}
        print(f"  {snr:2d} dB: misses {np.mean(best < neg.thr01):.3f} at 0.1 FA/h, {np.mean(best < neg.thr05):.3f} "
              f"at 0.5 FA/h", flush=True)
    conf = embs[len(EVAL_SNRS_DB) * n:]
    fa_conf = sum(bool((sc.scores(e) >= neg.thr01).any()) for e in conf)
    confusables = {"utterances": len(conf), "false_accepts_at_0.1_fa_per_hour": fa_conf,
                   "false_accepts_at_0.5_fa_per_hour": sum(bool((sc.scores(e) >= neg.thr05).any()) for e in conf)}
    print(f"confusables: {fa_conf} false accepts in {len(conf)} (0.1 FA/h threshold)", flush=True)
    return misses, confusables


DEFAULTS = {"limit": 600}


def add_arguments(g):
    """Format 2's own options (hotphrase.evaluate adds the shared ones)."""
    g.add_argument("--head", nargs="+", help="head folder (default WORKDIR/PHRASE/e1); several: their mean score")
    g.add_argument("--out", help="the report (default HEAD/eval.json; several heads: FIRST/eval_ensemble.json)")
    g.add_argument("--no-synthetic", action="store_true", help="skip the held-out synthetic positives/confusables")
    g.add_argument("--procs", type=int, default=os.cpu_count() or 2)
    g.add_argument("--extra-eval", nargs="+", default=[], metavar="DIR",
                   help="folders of held-out real recordings (get_public_negatives.py's WORKDIR/public/eval/*): "
                        "false accepts per hour on each, at the thresholds set by the usual negatives (they do not "
                        "move the thresholds, so the numbers stay comparable)")


def run(a):
    """Evaluates the head (or the heads' mean) and writes its report."""
    ph = PHRASES[a.phrase]
    hdirs = a.head or [os.path.join(a.workdir, a.phrase, "e1")]
    hdir = hdirs[0]
    if a.set_threshold and len(hdirs) > 1:
        raise HotPhraseError(hdir, "--set-threshold writes one head's threshold; not with several heads")
    heads = [E.load_head(d) for d in hdirs]
    head = heads[0][0]
    sc = Scorer(heads)
    t0 = time.time()
    syn, rsp, n_spk = negative_sets(a.workdir, a.procs)
    real = {w: real_keyword_set(a.workdir, w, a.procs) for w in REAL_WORDS}
    own = ph["real_positive"]

    parts = {"synthetic_speech_and_noise": syn, "real_speech_eval_speakers": rsp}
    parts.update({f"real_{w}": real[w][0] for w in REAL_WORDS if w != own})
    neg = Negatives(sc, parts, n_spk)
    report = {"phrase": ph["display"], "head": hdir if len(hdirs) == 1 else hdirs, "frames": head["frames"],
              "smoothing": head["smoothing"],
              "negatives": neg.report, "real_speech_alone": neg.real_speech}
    thr_all = None
    if a.extra_eval:
        report["extra_eval"], report["with_extra_eval"], thr_all = extra_eval(sc, a.workdir, a.extra_eval, a.procs,
                                                                              neg)
    if own:
        report["real_recordings"] = recipe_check(sc, head, own, real[own], neg, thr_all,
                                                 report.get("with_extra_eval"))
    if not a.no_synthetic:
        report["misses"], report["confusables"] = synthetic(
            sc, head, synthetic_positive_set(a.workdir, a.phrase, a.procs, a.limit), neg)

    if a.set_threshold:
        head["threshold"] = neg.thr01
        with open(os.path.join(hdir, "head.json"), "w") as out_file:
            json.dump(head, out_file, indent=1)
        print(f"{hdir}/head.json: threshold set to {neg.thr01}", flush=True)
    out = a.out or os.path.join(hdir, "eval.json" if len(hdirs) == 1 else "eval_ensemble.json")
    with open(out, "w") as out_file:
        json.dump(report, out_file, indent=1)
    print(f"wrote {out} in {time.time() - t0:.0f} s", flush=True)
