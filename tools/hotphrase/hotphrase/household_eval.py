"""The personal scorer measured on real recordings, and the bank's z_threshold.

  python -m hotphrase.household_eval --bank share/hotphrase/negative-bank.hpm --speakers SPEAKERS.json
         [--public DIR] [--real-speech DIR] [--keywords DIR] [--draws 3] [--json OUT] [--write-threshold]
         [--scorers dtw cos white] [--bank-z] [--generic HEAD_DIR ...] [--condition NAME=DIR ...]
  python -m hotphrase.household_eval --bank BANK --merge-z-folds REPORT.json ...

- Enrolled people: the four real keyword folders, speakers recovered by cluster_speakers (Resemblyzer); for every
  speaker with at least 6 clips that pass the take checks, `--draws` draws of 3 takes enrol the keyword
  (household.template_frames); the rest of that speaker's clips are the test positives, every other speaker's
  clips of the same keyword the guests.
- Negatives, real read speech held out by speaker from the bank (its header's bank_speakers): the *threshold*
  side is speechocean762's training speakers not in the bank, a third of them (seeded); the *test* side is the
  other two thirds, get_public_negatives' evaluation split (speechocean762, fsdd, ovos, speech_commands: other
  speakers) and ../shared LibriSpeech. Each speaker's recordings are one stream from reset.
- Scorers, each z-normalised against the bank: subsequence DTW (docs/household.md), a cosine mean-template (the
  takes' templates resampled to their mean length and averaged; rigid, over the last K frames) and a whitened
  mean-template (the same after whitening the centred frames with the bank's covariance).
- The threshold: for each scorer and keyword, the lowest z on a 0.1 grid at which the false accepts an hour on
  the threshold side, averaged over that keyword's enrollments, are at most 0.5; the scorer's one threshold is
  the highest of these (every phrase at most 0.5 an hour there); never looked up on the test side.
  `--write-threshold` writes DTW's into the bank's header; `--merge REPORT.json ...` takes the highest DTW
  threshold of several runs' reports (e.g. one run per keyword, as they become ready) and writes that.
- Reported at that z: misses of the enrolled speaker's other clips, false accepts an hour on the test side (mean
  and worst enrollment), and how often guests' clips are heard. A clip is heard when the personal score reaches
  the threshold at any step of it (1 s of silence before, 0.5 s after, as a stream from reset).
- `--generic HEAD_DIR...` (one keyword's speakers): each recipe-e1 head at its own eval.json 0.5 FA/h threshold
  beside the personal scorer (DTW; with `--bank-z` at the bank's shipped z_threshold instead of one chosen here):
  generic alone, personal alone and fused (either fires, docs/household.md) on the same enrollments, clips and
  test side. `--condition NAME=DIR` adds every clip rendered in noise or a room (household_conditions;
  enrollment stays clean): the enrolled people's misses and the guests heard, for the three. With
  `--condition-test-side` also the false accepts an hour on the test side in that condition: DIR holds the
  --test-npz files' renderings under the same names (household_conditions --test-side-...).
- The z sweep (`--z-sweep LO:HI:STEP`, with --condition): the same per-clip best z and test-side z series read at
  every z of a grid (sweep_rows): how low the misses in each condition go when the z alone is lowered, and the
  false accepts an hour that costs; the ceiling of any check made after the templates' decision.
- The bank's z (the same `--z-sweep`, with `--public`): each z's wakes also on the threshold side and on the test
  side's two folds of whole streams, so that the bank's z can be picked by its rule on more than the threshold
  side alone, whose 0.63 h misjudged a keyword (pooled_z_pick; household_tables --z-folds).
  `--merge-z-folds REPORT.json ...` writes the z picked on every side into the bank's header: the shipped bank's.
- `--candidates-out` writes every candidate wake of the personal path, for a check of the voice after the
  templates' decision (the lab's speaker_check).
"""
import collections
import json
import os
import sys

import numpy as np

from . import cli
from . import dataset as D
from . import frontend_registry as FR
from . import hpmfile
from . import household as H
from .constants import EMB_DIM, SAMPLE_RATE, STEP_SECONDS
from .errors import HotPhraseError
from .negative_bank import default_public_dir, read_manifests

GRID = np.round(np.arange(0.0, 40.0, 0.1), 1)
TARGET_FA_PER_HOUR = 0.5
MIN_CLIPS = 6
TAKES = 3
REFRACTORY_STEPS = 25  # 2 s of 80 ms steps
DENSE = 5000
SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data")


class Embedder:
    """The TFLite speech_embedding with household's t_k (the Swift detector's report). With a front end
    (frontend_registry.make: int16 -> int16) every call first runs it over exactly the samples embedded, from their
    start (a padded take, a padded clip, a speaker's whole stream), as a front end inside the speaker's embedding
    path would run from the same reset."""

    def __init__(self, frontend=None):
        from .embedding import Frontend
        self.fe = Frontend()
        self.frontend = frontend

    def __call__(self, samples):
        if self.frontend is not None:
            samples = self.frontend(np.asarray(samples, np.int16))
        e = self.fe(np.asarray(samples, np.float32) / 32768.0)
        return e, np.array([H.step_end(k) for k in range(len(e))], np.int64)


def stamp(z):
    """The front end a cache (np.load'ed) records: household_conditions' `frontend` entry, "none" without one."""
    return str(z["frontend"]) if "frontend" in z.files else "none"


def made_through(path):
    """stamp() of a cache file."""
    with np.load(path, allow_pickle=True) as z:
        return stamp(z)


def check_frontend(path, z, frontend):
    """A cache of embeddings (np.load'ed) is used only when it was made through the same front end: its
    `frontend` entry (household_conditions writes it; evaluate_format2's caches have none: "none")."""
    made = stamp(z)
    want = frontend or "none"
    # household_conditions --oracle: the ideal gate of a noisy condition, which is no gate at all on the clean
    # takes, clips and test side, so it stands beside renderings without a front end
    if made != want and not (want == "none" and made.startswith("oracle-")):
        raise HotPhraseError(path, f"embedded through front end {made}, this run's is {want}: caches made through "
                                   "different front ends are never mixed (render it again with "
                                   "household_conditions --frontend)")


def cached(path, make):
    if os.path.exists(path):
        z = np.load(path, allow_pickle=True)
        return list(z["streams"]), [str(s) for s in z["names"]], float(z["seconds"])
    streams, names, seconds = make()
    # a cache folder not made yet is made, not an error after the whole run's work
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    np.savez(path, streams=np.array(streams, dtype=object), names=np.array(names), seconds=seconds)
    return streams, names, seconds


def speaker_streams(emb, groups):
    """[(raw embeddings)] one stream per speaker (its files joined, from reset), the names, the seconds."""
    streams, names, seconds = [], [], 0.0
    for name, files in sorted(groups.items()):
        x = np.concatenate([D.read_audio(f) for f in sorted(files)])
        seconds += len(x) / SAMPLE_RATE
        streams.append(emb(np.round(x * 32767).astype(np.int16))[0].astype(np.float16))
        names.append(name)
    return streams, names, seconds


def negative_groups(public, real_speech, bank_header, seed):
    """(threshold side, test side): {speaker name: [files]}."""
    rows = read_manifests(public)
    banned = {(s, spk) for s, spks in bank_header["bank_speakers"].items() for spk in spks}
    for s, spks in bank_header["bank_speakers"].items():
        for spk in spks:
            if "," in spk:
                banned |= {(s, x) for x in spk.split(",")}
    train_so = collections.defaultdict(list)
    test = collections.defaultdict(list)
    for r in rows:
        if r["kind"] != "speech" or (r["source"], r["speaker"]) in banned:
            continue
        f = os.path.join(public, r["path"])
        if r["split"] == "train" and r["source"] == "speechocean762":
            train_so[r["speaker"]].append(f)
        elif r["split"] == "eval":
            test[f"{r['source']}/{r['speaker']}"].append(f)
    spk = sorted(train_so)
    order = np.random.default_rng(seed).permutation(len(spk))
    n_thr = len(spk) // 3
    threshold = {f"speechocean762/{spk[i]}": train_so[spk[i]] for i in order[:n_thr]}
    for i in order[n_thr:]:
        test[f"speechocean762/{spk[i]}"] = train_so[spk[i]]
    libri = os.path.join(real_speech, "librispeech")
    for n in sorted(os.listdir(libri)):
        if n.endswith(".flac"):
            test[f"librispeech/{n.split('-')[0]}"].append(os.path.join(libri, n))
    return threshold, test


# --- the scorers --------------------------------------------------------------------------------------------------

def resample(T, K):
    """A template's frames resampled to K frames (linear in the frame index), rows renormalised."""
    L = len(T)
    pos = np.linspace(0, L - 1, K)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, L - 1)
    w = (pos - lo)[:, None]
    R = (1 - w) * T[lo] + w * T[hi]
    return R / np.maximum(np.linalg.norm(R, axis=1, keepdims=True), 1e-12)


def mean_template(templates):
    K = int(round(np.mean([len(T) for T in templates])))
    M = np.mean([resample(T, K) for T in templates], axis=0)
    return M / np.maximum(np.linalg.norm(M, axis=1, keepdims=True), 1e-12)


def rigid_scores(M, X):
    """Mean cosine distance of the mean template to the last K frames, at every step (inf before K frames)."""
    K = len(M)
    c = 1.0 - M @ X.T  # [K, N]
    N = X.shape[0]
    out = np.full(N, np.inf)
    if N >= K:
        s = np.zeros(N - K + 1)
        for k in range(K):
            s += c[k, k:N - K + 1 + k]
        out[K - 1:] = s / K
    return out


class Scorers:
    """Per enrollment: DTW's three templates, the cosine and whitened mean templates; all with bank mu/sd."""

    def __init__(self, mean, bank_raw_segments):
        self.mean = mean
        d = np.concatenate(bank_raw_segments).astype(np.float64) - mean
        cov = np.cov(d.T) + 1e-3 * np.eye(EMB_DIM) * np.trace(np.cov(d.T)) / EMB_DIM
        w, v = np.linalg.eigh(cov)
        self.W = v @ np.diag(w ** -0.5) @ v.T
        self.bank = [H.centre(s, mean) for s in bank_raw_segments]
        self.bank_w = [self.whiten(s) for s in bank_raw_segments]

    def whiten(self, e):
        x = (np.asarray(e, np.float64) - self.mean) @ self.W
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

    def dtw_stats(self, templates):
        """household.bank_stats of many templates at once (one DTW pass over the bank for all)."""
        scores = [[] for _ in templates]
        for seg in self.bank:
            s = H.dtw_scores(templates, seg)
            for j, T in enumerate(templates):
                if len(seg) >= len(T):
                    scores[j].append(s[j, len(T) - 1:])
        out = []
        for sc in scores:
            sc = np.concatenate(sc)
            out.append((float(sc.mean()), float(sc.std())))
        return out

    def enrol(self, raw_templates, stats=None):
        T = [H.centre(e, self.mean) for e in raw_templates]
        enr = {"dtw": T, "dtw_stats": stats or [H.bank_stats(t, self.bank) for t in T]}
        enr["cos"] = mean_template(T)
        enr["white"] = mean_template([self.whiten(e) for e in raw_templates])
        for k, bank in (("cos", self.bank), ("white", self.bank_w)):
            s = np.concatenate([rigid_scores(enr[k], b)[len(enr[k]) - 1:] for b in bank if len(b) >= len(enr[k])])
            enr[k + "_stats"] = (float(s.mean()), float(s.std()))
        return enr


def template_z(enrollments, raw, scorers):
    """[E, TAKES, N] each DTW template's z over one stream of raw embeddings (-inf until its path exists)."""
    X = H.centre(raw, scorers.mean)
    T = [t for e in enrollments for t in e["dtw"]]
    s = H.dtw_scores(T, X)
    z = np.empty_like(s)
    j = 0
    for e in enrollments:
        for (mu, sd) in e["dtw_stats"]:
            z[j] = H.z_scores(s[j], mu, sd)
            j += 1
    return z.reshape(len(enrollments), TAKES, -1)


def personal(enrollments, raw, scorers, kind):
    """[E, N] personal z of each enrollment over one stream of raw embeddings."""
    if kind == "dtw":
        return template_z(enrollments, raw, scorers).max(axis=1)
    X = H.centre(raw, scorers.mean) if kind == "cos" else scorers.whiten(raw)
    return np.stack([H.z_scores(rigid_scores(e[kind], X), *e[kind + "_stats"]) for e in enrollments])


def count_wakes(row, th):
    """Wakes of one z series at threshold th with the 2 s refractory period (greedy, as the detector). Where
    more than DENSE steps reach th the lower bound hits / 25 is returned instead (such a threshold is far above
    any target: thousands of wakes an hour)."""
    idx = np.flatnonzero(row >= th)
    if len(idx) > DENSE:
        return len(idx) / REFRACTORY_STEPS
    return len(greedy_wakes(idx))


def greedy_wakes(idx):
    """The wakes among the steps idx (sorted) that reach a threshold: each the first step at least a refractory
    period after the last (one search a wake, so a low z's sweep, thousands of steps above it, costs its wakes
    rather than its steps)."""
    out, i = [], 0
    while i < len(idx):
        out.append(int(idx[i]))
        i = int(np.searchsorted(idx, idx[i] + REFRACTORY_STEPS))
    return out


def z_series(enrollments, streams, scorers, kind):
    """[E, total steps] personal z over every stream, streams apart by a refractory period of -inf (each stream
    runs from reset)."""
    parts = []
    gap = np.full((len(enrollments), REFRACTORY_STEPS), -np.inf, np.float32)
    for raw in streams:
        raw = np.asarray(raw, np.float32)
        if len(raw):
            z = personal(enrollments, raw, scorers, kind)
            parts += [np.where(np.isfinite(z), z, -np.inf).astype(np.float32), gap]
    return np.concatenate(parts, axis=1)


def choose_threshold(z, hours):
    """The lowest z on GRID at which the mean over enrollments of wakes an hour is at most the target, searched
    from the top down (wakes rise as z falls; the search stops at the first grid point above the target)."""
    best, fa = float(GRID[-1]), None
    for th in GRID[::-1]:
        mean = float(np.mean([count_wakes(row, th) for row in z])) / hours
        if mean > TARGET_FA_PER_HOUR:
            break
        best, fa = float(th), mean
    return best, fa


# --- the generic model beside the personal scorer, and the two fused ----------------------------------------------

def generic_threshold(head_dir):
    """A recipe-e1 head's own operating point: its eval.json's threshold at 0.5 false accepts an hour (the device's
    default sensitivity for the shipped model), never looked up on this test side."""
    path = os.path.join(head_dir, "eval.json")
    try:
        with open(path) as f:
            return float(json.load(f)["negatives"]["threshold_at_0.5_fa_per_hour"])
    except FileNotFoundError:
        raise HotPhraseError(path, "missing: run hotphrase.evaluate --format 2 on this head first")
    except (KeyError, TypeError, ValueError) as e:
        raise HotPhraseError(path, f"no negatives.threshold_at_0.5_fa_per_hour ({e})")


def generic_series(head, arrays, raw):
    """The head's smoothed score at every embedding step of one stream (as personal()'s columns: -inf before the
    head's first full window, frames - 1)."""
    from . import embedding as E
    out = np.full(len(raw), -np.inf, np.float32)
    s, steps = E.head_scores(head, arrays, np.asarray(raw, np.float32))
    out[steps] = s
    return out


def fused_fires(z_row, z_th, g_row, g_th):
    """The fused detector's decision at every step: the personal z reaches its threshold or the generic score
    reaches its own (docs/household.md, "Fusion": the max of the two decisions), as 1.0 / 0.0 for count_wakes."""
    return ((np.asarray(z_row) >= z_th) | (np.asarray(g_row) >= g_th)).astype(np.float32)


def clip_outcomes(own_best, guest_best, th):
    """(own clips missed, own clips, guests' clips heard, guests' clips) of best scores against a threshold."""
    own_best, guest_best = np.asarray(own_best), np.asarray(guest_best)
    return [int(np.sum(own_best < th)), len(own_best), int(np.sum(guest_best >= th)), len(guest_best)]


def load_streams(paths, frontend=None):
    """The streams of the format-2 evaluation's ragged caches (emb + offsets), in order; a missing file, or one made
    through another front end (check_frontend), is an error."""
    out = []
    for path in paths:
        if not os.path.exists(path):
            raise HotPhraseError(path, "missing (render it with household_conditions --test-side-...)")
        z = np.load(path)
        check_frontend(path, z, frontend)
        # one read of the array (each z["emb"] reads and decompresses it all again)
        o, emb = z["offsets"], z["emb"]
        out += [emb[o[i]:o[i + 1]] for i in range(len(o) - 1)]
    return out


def read_clips(folder, names):
    """{name: int16 samples} of a keyword folder's clips `names`, and the set of those that pass the take checks
    (household.check_take): what main reads before it draws."""
    audio, passed = {}, set()
    for n in names:
        x = np.round(D.read_audio(os.path.join(folder, n)) * 32767).astype(np.int16)
        audio[n] = x
        try:
            H.check_take(x, n)
            passed.add(n)
        except H.TakeError:
            pass
    return audio, passed


def enrollment_draws(labels, passed, draws, seed, min_clips=6, takes=3):
    """main's drawing for one keyword, repeated (household_learning, household_negatives): labels {clip name: speaker}, passed the names that
    pass the take checks. Returns [(speaker, draw, pick, own)], own the speaker's other clips in name order, in
    household_eval's order (speakers by label, draws in turn; every speaker with enough clips draws from one
    generator)."""
    rng = np.random.default_rng(seed)
    by_spk = collections.defaultdict(list)
    for n in sorted(labels):
        by_spk[labels[n]].append(n)
    out = []
    for lab, names in sorted(by_spk.items()):
        ok = [n for n in names if n in passed]
        if len(ok) < min_clips:
            continue
        for d in range(draws):
            pick = [str(n) for n in rng.choice(ok, takes, replace=False)]
            out.append((lab, d, pick, [n for n in names if n not in pick]))
    return out


def one_keyword(path):
    """cluster_speakers' output for one keyword -> (keyword, {clip name: speaker}); more than one is an error."""
    with open(path) as f:
        spk = json.load(f)["keywords"]
    if len(spk) != 1:
        raise HotPhraseError(path, f"one keyword's speakers, not {sorted(spk)}")
    (word, labels), = spk.items()
    return word, labels


def draw_enrollments(spk_word, folder, seed, draws, embedder):
    """main's draws for one keyword, step for step (enrollment_draws: the same rng calls in the same order), each
    take embedded once: [(raw takes, meta)] with meta's own clips and guests; a draw with a take the embedding
    refuses is left out, as main leaves it out (household_negatives, household_learning). meta also holds each
    take's samples and speech span ("take_audio", "take_spans"), which a multi-condition enrollment renders."""
    names_all = sorted(spk_word)
    audio, passed = read_clips(folder, names_all)
    takes, spans, out = {}, {}, []
    for lab, d, pick, own in enrollment_draws(spk_word, passed, draws, seed):
        for n in pick:
            if n not in takes:
                try:
                    takes[n], _, spans[n] = H.template_frames(None, None, audio[n], n, embedder=embedder)
                except H.TakeError:
                    takes[n] = None
        if any(takes[n] is None for n in pick):
            continue
        out.append(([takes[n] for n in pick],
                    {"speaker": int(lab), "draw": d, "takes": pick, "own": own,
                     "guests": [n for n in names_all if spk_word[n] != lab],
                     "take_audio": [audio[n] for n in pick], "take_spans": [spans[n] for n in pick]}))
    return out


def load_clips_npz(path, names, frontend=None):
    """{clip name: raw embeddings} from an evaluate_format2-style ragged cache (emb + offsets) of a keyword folder's
    clips in sorted name order (e1_eval_real_WORD.npz, or household_conditions' renderings of the same clips),
    made through the front end `frontend` (check_frontend)."""
    if not os.path.exists(path):
        raise HotPhraseError(path, "missing")
    z = np.load(path)
    check_frontend(path, z, frontend)
    o = z["offsets"]
    if len(o) - 1 != len(names):
        raise HotPhraseError(path, f"holds {len(o) - 1} clips, the speakers file {len(names)}")
    emb = z["emb"]  # once: each z["emb"] reads it all again
    return {n: emb[o[i]:o[i + 1]] for i, n in enumerate(sorted(names))}


def load_labels(path, names):
    """{clip name: what its rendering drew} from household_conditions' `labels` (room key and/or noise family), or
    None for a file without them."""
    z = np.load(path)
    if "labels" not in z.files:
        return None
    return {n: str(lab) for n, lab in zip(sorted(names), z["labels"])}


def misses_by_label(pbest, meta, col, z_th, labels):
    """{label: {own_missed_pct, own_clips}} of the personal scorer, pooled over enrollments as fused_report's."""
    tot = collections.defaultdict(lambda: [0, 0])
    for r, m in enumerate(meta):
        for n in m["own"]:
            t = tot[labels[n]]
            t[0] += int(pbest[r, col[n]] < z_th)
            t[1] += 1
    return {k: {"own_missed_pct": round(100 * v[0] / max(v[1], 1), 2), "own_clips": v[1]}
            for k, v in sorted(tot.items())}


def false_accepts(enrollments, scorers, streams, z_th, heads, sweep=None, folds=None):
    """Wakes on the streams: (personal [E], generic {head: n}, fused {head: [E]}). With sweep (grid, counts [E, G]):
    the personal path's wakes at each z of the grid are also added to counts (the same z series, one DTW pass).
    With folds ([k, E, G], and sweep) each stream's sweep counts are also added to its fold: the i-th non-empty
    stream's to fold i % k, as household_head.stream_folds cuts the test side."""
    fa_personal = np.zeros(len(enrollments))
    fa_generic = {h[0]: 0 for h in heads}
    fa_fused = {h[0]: np.zeros(len(enrollments)) for h in heads}
    heard_streams = 0
    for raw in streams:
        raw = np.asarray(raw, np.float32)
        if not len(raw):
            continue
        z = personal(enrollments, raw, scorers, "dtw")
        z = np.where(np.isfinite(z), z, -np.inf)
        fa_personal += [count_wakes(r, z_th) for r in z]
        if sweep is not None:
            grid, counts = sweep
            here = np.array([[count_wakes(r, th) for th in grid] for r in z], float).reshape(len(z), len(grid))
            counts += here
            if folds is not None:
                folds[heard_streams % len(folds)] += here
        heard_streams += 1
        for name, head, arrays, g_th in heads:
            g = generic_series(head, arrays, raw)
            fa_generic[name] += count_wakes(g, g_th)
            fa_fused[name] += [count_wakes(fused_fires(r, z_th, g, g_th), 0.5) for r in z]
    return fa_personal, fa_generic, fa_fused


def fa_rates(fa_personal, fa_generic, fa_fused, hours):
    """{detector or head: its false accepts an hour}: personal's and each fused's as the mean over enrollments
    and the worst enrollment, each generic head's as one number."""
    out = {"personal": {"test_fa_per_hour_mean": round(float(fa_personal.mean()) / hours, 3),
                        "test_fa_per_hour_worst_enrollment": round(float(fa_personal.max()) / hours, 3)}}
    for name in fa_generic:
        out[name] = {"generic": {"test_fa_per_hour": round(fa_generic[name] / hours, 3)},
                     "fused": {"test_fa_per_hour_mean": round(float(fa_fused[name].mean()) / hours, 3),
                               "test_fa_per_hour_worst_enrollment": round(float(fa_fused[name].max()) / hours, 3)}}
    return out


def parse_z_sweep(spec):
    """"LO:HI:STEP" -> the z grid (rounded to 0.01), LO and HI included."""
    try:
        lo, hi, step = (float(x) for x in spec.split(":"))
    except ValueError:
        raise HotPhraseError(spec, "--z-sweep wants LO:HI:STEP, e.g. 2:6:0.5") from None
    if step <= 0 or hi < lo:
        raise HotPhraseError(spec, "--z-sweep wants LO <= HI and STEP > 0")
    return [round(float(z), 2) for z in np.arange(lo, hi + step / 2, step)]


def sweep_rows(meta, col, pbest_by_condition, wakes, hours, grid, fold_wakes=None, threshold_wakes=None):
    """The personal path at every z of a grid, on the per-clip best z already scored
    (pbest_by_condition {condition: [E, C]}, "clean" among them) and the test side's wakes at each z (wakes [E, G],
    false_accepts' sweep). Per z: the enrolled people's other clips missed in each condition and the guests heard
    clean (pooled over enrollments, as fused_report), and the false accepts an hour (mean over enrollments, worst);
    fa_lower_bound where some stream had more than DENSE steps at or above the z (count_wakes' bound). With
    fold_wakes ([k, E, G], false_accepts' folds) and threshold_wakes ([E, G], the threshold side's sweep),
    each z's wakes summed over enrollments on each fold and on the threshold side, for pooled_z_pick."""
    out = []
    for k, z in enumerate(grid):
        row = {"z": z, "missed_pct": {}}
        if fold_wakes is not None:
            row["wakes_test_folds"] = [round(float(np.sum(f[:, k])), 3) for f in fold_wakes]
        if threshold_wakes is not None:
            row["wakes_threshold_side"] = round(float(np.sum(np.asarray(threshold_wakes)[:, k])), 3)
        for c, pb in pbest_by_condition.items():
            missed = total = 0
            for r, m in enumerate(meta):
                own = pb[r, [col[n] for n in m["own"]]]
                missed += int(np.sum(own < z))
                total += len(own)
            row["missed_pct"][c] = round(100 * missed / max(total, 1), 2)
        pb = pbest_by_condition["clean"]
        heard_n = total = 0
        for r, m in enumerate(meta):
            g = pb[r, [col[n] for n in m["guests"]]]
            heard_n += int(np.sum(g >= z))
            total += len(g)
        row["guests_heard_pct"] = round(100 * heard_n / max(total, 1), 2)
        w = np.asarray(wakes)[:, k]
        row["test_fa_per_hour_mean"] = round(float(w.mean()) / hours, 3)
        row["test_fa_per_hour_worst_enrollment"] = round(float(w.max()) / hours, 3)
        row["fa_lower_bound"] = bool(np.any(w != np.round(w)))
        out.append(row)
    return out


def peak_step(row, t, wait=H.PEAK_WAIT_STEPS):
    """The step of the match's peak for a wake crossing at t under the speaker's rule (household.decision_step: the
    speaker waits while the z rises, at most `wait` steps, and fires one step past the peak): the highest z from
    t up to the step it fires at (the first, on a tie). The match ends there, so a check of the voice reads the
    audio up to it."""
    return t + int(np.argmax(row[t:H.decision_step(row, t, wait) + 1]))


def wake_steps(row, th):
    """The greedy refractory wakes' crossing steps (count_wakes' wakes, not only their number)."""
    return greedy_wakes(np.flatnonzero(row >= th))


def stream_candidates(enrollments, scorers, streams, zs):
    """The candidate wakes on negative streams: for each z of zs, enrollment and stream, every wake of the
    personal path at that z (wake_steps) and the step it fires at (peak_step) -> int32 [n, 5] rows (z index,
    enrollment, stream, crossing step, firing step), and the streams' lengths in steps."""
    rows, lengths = [], []
    for s, raw in enumerate(streams):
        raw = np.asarray(raw, np.float32)
        lengths.append(len(raw))
        if not len(raw):
            continue
        z = personal(enrollments, raw, scorers, "dtw")
        z = np.where(np.isfinite(z), z, -np.inf)
        for e, r in enumerate(z):
            for k, th in enumerate(zs):
                rows += [(k, e, s, t, peak_step(r, t)) for t in wake_steps(r, th)]
    return np.array(rows, np.int32).reshape(-1, 5), np.array(lengths, np.int64)


def clip_best(enrollments, scorers, clips):
    """([E, C] best personal z over each clip, [E, C] the step it peaks at; -1 where the clip has no score)."""
    best = np.full((len(enrollments), len(clips)), -np.inf, np.float32)
    step = np.full((len(enrollments), len(clips)), -1, np.int32)
    for j, c in enumerate(clips):
        z = personal(enrollments, np.asarray(c, np.float32), scorers, "dtw")
        if z.shape[1]:
            z = np.where(np.isfinite(z), z, -np.inf)
            step[:, j] = np.argmax(z, axis=1)
            best[:, j] = z[np.arange(len(z)), step[:, j]]
    return best, step


def write_candidates(path, word, meta, names, enrollments, scorers, clip_sets, sides, zs, bank_z):
    """--candidates-out: what a check of the voice after the templates' decision needs, for
    hotphraselab.speaker_check: the draws (takes, own clips, guests), each clip's best z and its step in every
    condition (clip_sets {condition: [embeddings in names' order]}), and the candidate wakes at each z of zs on the
    negative sides (sides {name: (streams, what they are)})."""
    arrays = {"zs": np.array(zs, np.float32)}
    for c, cl in clip_sets.items():
        arrays[f"best/{c}"], arrays[f"step/{c}"] = clip_best(enrollments, scorers, cl)
        arrays[f"nsteps/{c}"] = np.array([len(x) for x in cl], np.int32)
    for side, (streams, _) in sides.items():
        arrays[f"cand/{side}"], arrays[f"len/{side}"] = stream_candidates(enrollments, scorers, streams, zs)
    info = {"word": word, "bank_z": bank_z, "clips": list(names), "conditions": list(clip_sets),
            "meta": [{k: m[k] for k in ("speaker", "draw", "takes", "own", "guests")} for m in meta],
            "sides": {side: what for side, (_, what) in sides.items()}}
    np.savez_compressed(path, info=np.array(json.dumps(info)), **arrays)
    print(f"{path}: {', '.join(f'{k} {v.shape}' for k, v in arrays.items())}", flush=True)


def fused_report(word, meta, enrollments, scorers, clips, test_streams, test_sec, z_th, heads, conditions,
                 condition_tests=None, condition_labels=None, z_grid=None, threshold_side=None):
    """Generic alone, personal alone (DTW at z_th) and fused, on the same enrollments, clips and test side.
    heads: [(name, head, arrays, threshold)]; conditions: {name: {clip name: raw embeddings}} (every clip
    rendered in noise or rooms; enrollment stays clean): the enrolled people's misses and the guests heard there;
    condition_tests: {name: (streams, seconds)}, the test side rendered in that condition: false accepts there.
    Missed and heard are pooled over the enrollments (each enrollment's own clips and guests, as per_word
    above). With z_grid, the sweep also counts each z's wakes on the test side's two folds (and, given
    threshold_side (streams, seconds), there), and z_sweep_sides says their hours: what pooled_z_pick reads."""
    names = sorted(clips)
    col = {n: j for j, n in enumerate(names)}
    idx = lambda ns: [col[n] for n in ns]  # noqa: E731
    hours = test_sec / 3600
    rep = {"z_threshold": z_th, "enrollments": len(enrollments), "test_side_hours": round(hours, 3), "heads": {}}

    def outcomes(pbest, gbest, g_th, own_only=False):
        """{detector: [own missed, own, guests heard, guests]} pooled over enrollments."""
        tot = collections.defaultdict(lambda: [0, 0, 0, 0])
        for r, m in enumerate(meta):
            o, g = idx(m["own"]), ([] if own_only else idx(m["guests"]))
            rows = {"personal": (pbest[r, o], pbest[r, g], z_th)}
            if gbest is not None:
                rows["generic"] = (gbest[o], gbest[g], g_th)
                # fused: heard when either is; as one score, max of the two margins over their thresholds
                fo = np.maximum(pbest[r, o] - z_th, gbest[o] - g_th)
                fg = np.maximum(pbest[r, g] - z_th, gbest[g] - g_th)
                rows["fused"] = (fo, fg, 0.0)
            for k, (ob, gb, th) in rows.items():
                tot[k] = [a + b for a, b in zip(tot[k], clip_outcomes(ob, gb, th))]
        out = {}
        for k, v in tot.items():
            out[k] = {"own_missed_pct": round(100 * v[0] / max(v[1], 1), 2), "own_clips": v[1]}
            if not own_only:
                out[k].update({"guests_heard_pct": round(100 * v[2] / max(v[3], 1), 2), "guest_clips": v[3]})
        return out

    def best_over(clip_map):
        cl = [clip_map[n] for n in names]
        pbest = heard(enrollments, cl, scorers, "dtw")
        gbest = {h[0]: np.array([generic_series(h[1], h[2], c).max() if len(c) else -np.inf for c in cl])
                 for h in heads}
        return pbest, gbest

    # the test side: personal z once per stream, each head's scores beside it
    sweep = (z_grid, np.zeros((len(enrollments), len(z_grid)))) if z_grid else None
    folds = np.zeros((Z_FOLDS, len(enrollments), len(z_grid))) if z_grid else None
    fa_personal, fa_generic, fa_fused = false_accepts(enrollments, scorers, test_streams, z_th, heads, sweep, folds)
    thr_wakes = None
    if z_grid and threshold_side and threshold_side[0]:
        thr_wakes = np.zeros((len(enrollments), len(z_grid)))
        false_accepts(enrollments, scorers, threshold_side[0], z_th, [], (z_grid, thr_wakes))
    pbest, gbest = best_over(clips)
    rep["personal"] = outcomes(pbest, None, None)["personal"]
    rep["personal"].update({"test_fa_per_hour_mean": round(float(fa_personal.mean()) / hours, 3) if hours else None,
                            "test_fa_per_hour_worst_enrollment":
                                round(float(fa_personal.max()) / hours, 3) if hours else None})
    cond_best = {c: best_over({n: cm[n] for n in names}) for c, cm in conditions.items()}
    rep["conditions"] = {c: {"personal": outcomes(pb, None, None)["personal"]} for c, (pb, _) in cond_best.items()}
    for c, labels in (condition_labels or {}).items():
        if labels is not None:
            rep["conditions"][c]["personal"]["by_rendering"] = misses_by_label(cond_best[c][0], meta, col, z_th,
                                                                               labels)
    if z_grid:
        rep["z_sweep"] = sweep_rows(meta, col, {"clean": pbest, **{c: pb for c, (pb, _) in cond_best.items()}},
                                    sweep[1], hours, z_grid, folds, thr_wakes)
        steps = [len(x) for x in test_streams if len(x)]
        rep["z_sweep_sides"] = {
            "enrollments": len(enrollments),
            "test_fold_hours": [round(sum(steps[f::Z_FOLDS]) * STEP_SECONDS / 3600, 4) for f in range(Z_FOLDS)],
            "threshold_side_hours": round(threshold_side[1] / 3600, 4) if thr_wakes is not None else None}
    cond_fa = {}
    for c, (streams, seconds) in (condition_tests or {}).items():
        cond_fa[c] = fa_rates(*false_accepts(enrollments, scorers, streams, z_th, heads), seconds / 3600)
        rep["conditions"][c]["test_side_hours"] = round(seconds / 3600, 3)
        rep["conditions"][c]["personal"].update(cond_fa[c]["personal"])
    for name, head, arrays, g_th in heads:
        o = outcomes(pbest, gbest[name], g_th)
        o["generic"]["test_fa_per_hour"] = round(fa_generic[name] / hours, 3)
        o["fused"].update({"test_fa_per_hour_mean": round(float(fa_fused[name].mean()) / hours, 3),
                           "test_fa_per_hour_worst_enrollment": round(float(fa_fused[name].max()) / hours, 3)})
        rep["heads"][name] = {"threshold": g_th, "generic": o["generic"], "fused": o["fused"]}
        for c, (pb, gb) in cond_best.items():
            oc = outcomes(pb, gb[name], g_th)
            if c in cond_fa:
                for k in ("generic", "fused"):
                    oc[k].update(cond_fa[c][name][k])
            rep["conditions"][c][name] = {"generic": oc["generic"], "fused": oc["fused"]}
    print(f"{word} fused", json.dumps(rep), flush=True)
    return rep


def heard(enrollments, clips, scorers, kind):
    """[E, C] the best personal z over each clip."""
    return np.stack([personal(enrollments, np.asarray(c, np.float32), scorers, kind).max(axis=1) for c in clips],
                    axis=1)


# --- an enrollment take's renderings in noise and rooms (household_head's positives; TakeRenderings.swift) ---------

# The renderings of an enrollment take draw only on the training side: four of augment.TRAIN_NOISES (babble of
# training voices: sent_train_piper.npz), never the evaluation's families (augment.EVAL_NOISES: fan, street, plucked
# music, held-out-voice babble), and a procedural room (an exponentially decaying noise tail, as augment.room_ir, but
# with a direct-to-reverberant ratio as low as the evaluation's rooms at 2-3 m reach), never the 12 image-source
# impulse responses of room_rirs.
ENROL_NOISES = ("pink", "hum", "music_chords", "babble")
ENROL_NOISE_SECONDS = 60
ENROL_RT60 = (0.3, 0.8)
ENROL_DRR_DB = (-3.0, 6.0)
Z_FOLDS = 2  # the z sweep's test side in two folds of whole streams (household_head.stream_folds' cut)


def parse_variant(spec):
    """An enrollment variant: "clean" (the takes alone) or renderings joined by "+", each "noiseSNR", "room" or
    "roomSNR" (the room, then noise), with "xK" for K renderings of that kind (other noise and rooms per k) ->
    [(kind, snr or None, k)]."""
    import re
    if spec == "clean":
        return []
    out = []
    for tok in spec.split("+"):
        m = re.fullmatch(r"(noise|room)(-?\d+(?:\.\d+)?)?(?:x(\d+))?", tok)
        if not m or (m.group(1) == "noise" and m.group(2) is None) or (m.group(3) is not None and
                                                                      int(m.group(3)) < 1):
            raise HotPhraseError(spec, f"'{tok}' is not a rendering: want noiseSNR, room or roomSNR, each with an "
                                       "optional xK (K >= 1), joined by +; or clean")
        snr = float(m.group(2)) if m.group(2) is not None else None
        for k in range(int(m.group(3) or 1)):
            key = (m.group(1), snr, k)
            if key in out:
                raise HotPhraseError(spec, f"'{tok}' repeats a rendering")
            out.append(key)
    return out


def enrol_room_ir(rng):
    """A procedural room: direct path 1.0 at sample 0, then an exponential noise tail (60 dB down at RT60) starting
    2-10 ms later, scaled to a direct-to-reverberant ratio drawn from ENROL_DRR_DB."""
    n = int(rng.uniform(*ENROL_RT60) * SAMPLE_RATE)
    tail = rng.standard_normal(n) * np.exp(-6.9 * np.arange(n) / n)
    tail[:int(rng.uniform(0.002, 0.01) * SAMPLE_RATE)] = 0
    tail *= 10 ** (-rng.uniform(*ENROL_DRR_DB) / 20) / (np.sqrt(np.sum(tail ** 2)) + 1e-12)
    tail[0] = 1.0
    return tail


def enrol_banks(sentences_npz, seed=37, utterances=None):
    """The training-side noise banks the renderings crop from (babble from the first 300 sentences; `utterances`:
    the npz's clips, when the caller has read them already)."""
    from . import augment as A
    utt = D.load_clips(sentences_npz)[0] if utterances is None else utterances
    rng = np.random.default_rng(seed)
    return {k: A.make_bank(rng, k, ENROL_NOISE_SECONDS, utt[:300]) for k in ENROL_NOISES}


def each_rendering(metas, renderings, banks, make, clean=False):
    """For each drawn enrollment (draw_enrollments' meta: takes, take_audio, take_spans), make(padded samples, the
    clean take's span, name) of every take rendered as each of `renderings` (render_take: seeded by the take's name
    and the rendering, so every draw enrolling a take gets the same one), each made once however many draws enrol
    the take; with clean=True the clean padded take comes first. -> ([E] lists: take by take, each take's versions
    in turn; Counter of what the renderings drew)."""
    made, drawn, out = {}, collections.Counter(), []
    versions = ([None] if clean else []) + list(renderings)
    for m in metas:
        rows = []
        for n, x, span in zip(m["takes"], m["take_audio"], m["take_spans"]):
            for r in versions:
                if (n, r) not in made:
                    if r is None:
                        y = H.padded_take(x)
                    else:
                        y, d = render_take(x, r, n, banks)
                        drawn.update(d)
                    made[(n, r)] = make(y, span, n)
                rows.append(made[(n, r)])
        out.append(rows)
    return out, drawn


def render_take(samples, rendering, name, banks):
    """A take (int16) padded as household.padded_take, rendered: through a procedural room (aligned on its direct
    path, scaled back to the dry take's active power) and/or in a training noise family at SNR dB over the take's
    active power (augment.mix), the noise over the whole padded rendering. Drawn from a seed of the take's name and
    the rendering, so every draw enrolling the take gets the same rendering. -> (int16 samples, what was drawn)."""
    import zlib
    from scipy.signal import fftconvolve
    from . import augment as A
    kind, snr, k = rendering
    seed = zlib.crc32(f"{name}/{kind}/{snr}/{k}".encode())
    rng = np.random.default_rng(seed)
    x = H.padded_take(samples).astype(np.float64) / 32768.0
    drawn = []
    if kind == "room":
        dry = A.active_power(x)
        y = fftconvolve(x, enrol_room_ir(rng))[:len(x)]
        x = y * np.sqrt(dry / A.active_power(y))
        drawn.append("room")
    if snr is not None:
        fam = ENROL_NOISES[(seed + k) % len(ENROL_NOISES)]
        x = A.mix(x.astype(np.float32), A.crop(rng, banks[fam], len(x)).astype(np.float32), snr)
        drawn.append(f"{fam} {snr:g} dB")
    return np.clip(np.round(np.asarray(x, np.float64) * 32768), -32768, 32767).astype(np.int16), drawn


# --- the measurement ----------------------------------------------------------------------------------------------

# What main hands from one step to the next: the options checked (checked_plan), both negative sides (negatives),
# the keywords' clips and drawn enrollments (draw_all).
Plan = collections.namedtuple("Plan", "z_grid conditions")
Negatives = collections.namedtuple("Negatives", "thr_groups thr_streams thr_names thr_sec test_streams test_names "
                                                "test_sec")
Draws = collections.namedtuple("Draws", "enrollments meta clip_embs rejected takes take_audio spans")


def parser(name=__name__, doc=__doc__):
    """The command's options (the lab's household_remedies adds its own)."""
    ap = cli.parser(name, doc)
    ap.add_argument("--bank", required=True)
    ap.add_argument("--speakers", help="cluster_speakers' output")
    ap.add_argument("--merge", nargs="*", default=None, help="only write the highest DTW z_threshold of these reports")
    ap.add_argument("--public", default=None)
    ap.add_argument("--real-speech", default=os.path.join(SHARED, "real-speech"))
    ap.add_argument("--keywords", default=os.environ.get("HOTPHRASE_REAL_KEYWORDS",
                                                         os.path.join(SHARED, "real-keywords")))
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--cache", default=None, help="folder for the negatives' embeddings (default: none)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--write-threshold", action="store_true")
    ap.add_argument("--negatives-only", action="store_true", help="only embed the negatives into --cache")
    ap.add_argument("--test-npz", nargs="*", default=None,
                    help="the test side from evaluate_format2's caches of held-out real streams (emb + offsets: "
                         "e1_eval_extra_*.npz of get_public_negatives' eval folders, e1_eval_neg_realspeech.npz) "
                         "instead of embedding it here; hours are their frames x 80 ms")
    ap.add_argument("--clips-dir", default=None,
                    help="evaluate_format2's cache folder: a keyword's test clips from its e1_eval_real_WORD.npz (each "
                         "clip after 2 s of held-out fan noise) instead of embedding them here")
    ap.add_argument("--scorers", nargs="+", choices=("dtw", "cos", "white"), default=["dtw", "cos", "white"])
    ap.add_argument("--bank-z", action="store_true",
                    help="score at the bank's shipped z_threshold (its header) instead of choosing one here")
    ap.add_argument("--generic", nargs="+", default=[], metavar="HEAD_DIR",
                    help="recipe-e1 heads of the (one) keyword, each at its eval.json 0.5 FA/h threshold: generic "
                         "alone, personal alone (DTW) and fused on the same clips and test side")
    ap.add_argument("--condition", action="append", default=[], metavar="NAME=DIR",
                    help="the enrolled people's other clips rendered in a condition (DIR/e1_eval_real_WORD.npz, "
                         "from household_conditions): misses and guests heard, enrollment clean (needs --clips-dir)")
    ap.add_argument("--condition-test-side", action="store_true",
                    help="also false accepts in each condition: its DIR holds the --test-npz files rendered in it, "
                         "under the same names (household_conditions --test-side-...)")
    ap.add_argument("--frontend", default="none", metavar=FR.metavar(),
                    help="a front end ahead of the embedding for everything embedded here (takes, clips, "
                         "negatives; frontend_registry.py: none, or the lab's through python -m "
                         "hotphraselab.household_eval); caches given (--clips-dir, --condition, --test-npz) must "
                         "have been made through the same one")
    ap.add_argument("--no-test-side", action="store_true",
                    help="misses only, no negatives at all (with --bank-z and --no-threshold-side; no "
                         "--test-npz, --generic or --z-sweep): every false-accept entry is null. For a front end "
                         "conditioned on the enrolled voice, whose test side would be each household's own")
    ap.add_argument("--no-threshold-side", action="store_true",
                    help="with --bank-z and --test-npz: no threshold side (it needs --public's speechocean762 "
                         "manifest); its false accepts are not reported")
    ap.add_argument("--z-sweep", default=None, metavar="LO:HI:STEP",
                    help="the personal path's misses (clean and each --condition), guests heard and false "
                         "accepts an hour on the test side at every z of the grid (needs --condition or --generic)")
    ap.add_argument("--candidates-out", default=None, metavar="NPZ",
                    help="write the clips' best z and steps in every condition and the negative sides' "
                         "candidate wakes at each --candidate-z, for hotphraselab.speaker_check (with --condition)")
    ap.add_argument("--candidate-z", nargs="+", type=float, default=[3.0, 4.0, 5.0, 5.9], metavar="Z")
    ap.add_argument("--limit", type=int, default=0, help="a quick check: only N speakers a negative side and 10 N "
                                                         "clips a keyword (never with --write-threshold)")
    ap.add_argument("--merge-z-folds", nargs="+", default=None, metavar="REPORT.json",
                    help="write into --bank the z pooled_z_pick picks on every side (the threshold side "
                         "and the whole test side) from these --z-sweep --public reports, one a keyword")
    return ap


@cli.command
def main(argv=None):
    run(parser().parse_args(argv))


def run(a, lab=None):
    """The command on parsed arguments (parser's), step by step. `lab` (hotphraselab.household_remedies) checks its
    own options among these (check_options(a)) and makes the report in measure's place (report(...))."""
    if a.merge:
        return merge(a.bank, a.merge)
    if a.merge_z_folds:
        return merge_z_folds(a.bank, a.merge_z_folds)
    frontend = FR.parse_frontend(a.frontend)
    check_sides(a)
    public = a.public or default_public_dir()
    header, _, mean, bank_segments = H.read_bank(a.bank)
    plan = checked_plan(a, header, lab)
    heads = [generic_head(d) for d in a.generic]
    if not a.speakers:
        raise HotPhraseError("--speakers", "needed (cluster_speakers' output), except with --merge")
    emb = embedder(a, frontend)
    scorers = Scorers(mean, bank_segments)
    neg = negatives(a, emb, frontend, public, header)
    if a.negatives_only:
        return
    with open(a.speakers) as f:
        spk = json.load(f)["keywords"]
    if (heads or plan.conditions) and len(spk) != 1:
        raise HotPhraseError(a.speakers, f"--generic and --condition need one keyword's speakers, not {sorted(spk)}")
    drawn = draw_all(a, spk, emb, frontend)
    if lab is not None:
        report = lab.report(a, spk, drawn, scorers, emb, heads, plan, header, neg, frontend)
    else:
        report = measure(a, spk, drawn, scorers, emb, heads, plan, header, neg, frontend)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    if a.write_threshold and lab is None:
        write_threshold(a.bank, [report])


def check_sides(a):
    """The options that leave a negative side out, checked before anything is read."""
    if a.no_test_side and (not a.no_threshold_side or a.test_npz or a.generic or a.z_sweep or a.candidates_out
                           or a.condition_test_side or a.write_threshold):
        raise HotPhraseError("--no-test-side", "goes with --bank-z and --no-threshold-side, and without --test-npz, "
                                               "--generic, --z-sweep, --candidates-out, --condition-test-side and "
                                               "--write-threshold")
    if a.no_threshold_side and not (a.bank_z and (a.test_npz or a.no_test_side)):
        raise HotPhraseError("--no-threshold-side", "needs --bank-z and --test-npz (nothing here is chosen on it)")


def checked_plan(a, header, lab=None):
    """The rest of the options checked against each other and the bank's header (and the lab's, by `lab`): a Plan
    (the z sweep's grid, {condition: folder})."""
    if a.bank_z and "z_threshold" not in header:
        raise HotPhraseError(a.bank, "--bank-z: the bank's header has no z_threshold")
    if a.bank_z and a.write_threshold:
        raise HotPhraseError("--bank-z", "scores at the bank's threshold; it cannot also write one")
    if a.condition and not a.clips_dir:
        raise HotPhraseError("--condition", "needs --clips-dir (the clean clips the conditions are renderings of)")
    if lab is not None:
        lab.check_options(a)
    z_grid = parse_z_sweep(a.z_sweep) if a.z_sweep else None
    if a.candidates_out and (not a.condition or not a.test_npz):
        raise HotPhraseError("--candidates-out", "needs --condition and --test-npz")
    if z_grid and not (a.condition or a.generic):
        raise HotPhraseError("--z-sweep", "needs --condition or --generic")
    if a.condition_test_side and not (a.condition and a.test_npz):
        raise HotPhraseError("--condition-test-side", "needs --condition and --test-npz (the files rendered in it)")
    conditions_dirs = {}
    for c in a.condition:
        name, sep, folder = c.partition("=")
        if not sep or not name or not folder:
            raise HotPhraseError(c, "--condition wants NAME=DIR")
        conditions_dirs[name] = folder
    return Plan(z_grid, conditions_dirs)


def generic_head(head_dir):
    """(name, head, arrays, threshold) of a recipe-e1 head at its own operating point (generic_threshold)."""
    from . import embedding as E
    head, arrays = E.load_head(head_dir)
    return os.path.basename(os.path.normpath(head_dir)), head, arrays, generic_threshold(head_dir)


def embedder(a, frontend):
    """The Embedder through the front end. A front end conditioned on the enrolled voice (the lab's gate that
    hears it) is enrolled per take, and its renderings must hold the clips (no test side: whose voice?)."""
    emb = Embedder(FR.make(frontend))
    if conditioned(emb) and not (a.clips_dir and a.no_test_side):
        raise HotPhraseError(a.frontend, "a gate conditioned on a voice: give --clips-dir (household_conditions "
                                         "--enrol-from) and --no-test-side (its test side is not measured yet)")
    return emb


def conditioned(emb):
    return bool(getattr(emb.frontend, "conditioned", False))


def negatives(a, emb, frontend, public, header):
    """Both negative sides' streams (Negatives): embedded here (cached in --cache by side and front end), or the
    test side from --test-npz; a side left out is empty."""
    if a.no_threshold_side:
        thr_groups, test_groups = {}, {}
    else:
        thr_groups, test_groups = negative_groups(public, a.real_speech, header, a.seed)
    if a.limit:
        if a.write_threshold:
            raise HotPhraseError("--limit", "a quick check never sets the bank's threshold")
        thr_groups = dict(sorted(thr_groups.items())[:a.limit])
        test_groups = dict(sorted(test_groups.items())[:a.limit])

    def side(name, groups):
        make = lambda: speaker_streams(emb, groups)  # noqa: E731
        if a.cache and not a.limit:
            os.makedirs(a.cache, exist_ok=True)
            return cached(os.path.join(a.cache, f"neg-{name}{FR.tag(frontend)}.npz"), make)
        return make()
    if a.no_threshold_side:
        thr_streams, thr_names, thr_sec = [], [], 0.0
    else:
        thr_streams, thr_names, thr_sec = side("threshold", thr_groups)
    if a.test_npz:
        test_streams = load_streams(a.test_npz, frontend)
        test_names = [os.path.basename(p) for p in a.test_npz]
        test_sec = sum(len(x) for x in test_streams) * STEP_SECONDS
    elif a.no_test_side:
        test_streams, test_names, test_sec = [], [], 0.0
    else:
        test_streams, test_names, test_sec = side("test", test_groups)
    test_what = f"{len(test_names)} cache files" if a.test_npz else f"{len(test_names)} speakers"
    print(f"negatives: threshold side {thr_sec / 3600:.2f} h ({len(thr_names)} speakers), test side "
          f"{test_sec / 3600:.2f} h ({test_what})", flush=True)
    return Negatives(thr_groups, thr_streams, thr_names, thr_sec, test_streams, test_names, test_sec)


def limited(a, labels):
    """A keyword's clip names in order, the first 10 x --limit with --limit."""
    return sorted(labels)[:10 * a.limit or None]


def draw_all(a, spk, emb, frontend):
    """Every keyword's clips read and embedded, and its enrollments drawn (one generator, keywords in order): the
    Draws (takes: the last keyword's). Takes the checks reject are counted by reason."""
    rng = np.random.default_rng(a.seed)
    d = Draws([], [], {}, collections.Counter(), {}, {}, {})
    for word in sorted(spk):
        folder = os.path.join(a.keywords, word)
        d.takes.clear()  # a keyword's own takes (clip names repeat across keywords); the last keyword's are kept
        audio, passed, by_spk = read_word(a, word, spk[word], folder, emb, frontend, d)
        draw_word(a, word, spk[word], folder, audio, passed, by_spk, emb, rng, d)
        print(f"{word}: {len(by_spk)} speakers, {sum(1 for m in d.meta if m['word'] == word)} enrollments",
              flush=True)
    return d


def read_word(a, word, labels, folder, emb, frontend, d):
    """One keyword's clips: each read, checked as a take (rejections counted in d.rejected) and embedded as a test
    clip (1 s of silence before it, 0.5 s after, or --clips-dir's embeddings) into d.clip_embs. Returns
    ({name: int16 samples}, the names that pass the checks, {speaker: [names]})."""
    by_spk = collections.defaultdict(list)
    audio, passed = {}, set()
    cached_clips = None
    if a.clips_dir:
        cached_clips = load_clips_npz(os.path.join(a.clips_dir, f"e1_eval_real_{word}.npz"), labels, frontend)
    for n in limited(a, labels):
        x = np.round(D.read_audio(os.path.join(folder, n)) * 32767).astype(np.int16)
        audio[n] = x
        try:
            H.check_take(x, n)
            passed.add(n)
        except H.TakeError as e:
            d.rejected[e.kind] += 1
        if cached_clips is not None:
            d.clip_embs[(word, n)] = cached_clips[n]
        else:
            pad = np.concatenate([np.zeros(SAMPLE_RATE, np.int16), x, np.zeros(SAMPLE_RATE // 2, np.int16)])
            d.clip_embs[(word, n)] = emb(pad)[0]
        by_spk[labels[n]].append(n)
    return audio, passed, by_spk


def draw_word(a, word, labels, folder, audio, passed, by_spk, emb, rng, d):
    """One keyword's enrollments: for every speaker with at least MIN_CLIPS clips that pass the checks, --draws
    draws of TAKES takes, each take embedded once (household.template_frames) into d.takes; a draw with a take
    the embedding refuses is left out. Appends to d.enrollments (raw takes) and d.meta."""
    names_all = limited(a, labels)
    sets = emb.frontend.enrollment_sets(names_all, labels) if conditioned(emb) else None
    for lab, names in sorted(by_spk.items()):
        ok = [n for n in names if n in passed]
        if len(ok) < MIN_CLIPS:
            continue
        for draw in range(a.draws):
            pick = list(rng.choice(ok, TAKES, replace=False))
            for n in pick:
                if n not in d.takes:
                    if sets is not None:  # the take's gate enrolled as household_conditions enrolled its clip's
                        js = sets[names_all.index(n)] or [names_all.index(n)]
                        emb.frontend.enrol_clips([D.read_audio(os.path.join(folder, names_all[j])) for j in js])
                    try:
                        d.takes[n], _, d.spans[n] = H.template_frames(None, None, audio[n], n, embedder=emb)
                        d.take_audio[n] = audio[n]
                    except H.TakeError:
                        # fewer than 4 frames in the span: "no speech found" after embedding
                        d.takes[n] = None
            if any(d.takes[n] is None for n in pick):
                d.rejected["no speech found (frames)"] += 1
                continue
            d.enrollments.append([d.takes[n] for n in pick])
            d.meta.append({"word": word, "speaker": int(lab), "draw": draw, "takes": pick,
                           "own": [n for n in names if n not in pick],
                           "guests": [n for n in names_all if labels[n] != lab]})


def measure(a, spk, drawn, scorers, emb, heads, plan, header, neg, frontend):
    """The report: each scorer at its z (scorer_report), and with --generic or --condition the fused report."""
    raw = drawn.enrollments
    stats = scorers.dtw_stats([H.centre(e, scorers.mean) for takes in raw for e in takes])
    enrollments = [scorers.enrol(takes, stats[TAKES * i:TAKES * (i + 1)]) for i, takes in enumerate(raw)]
    print(f"enrollments: {len(enrollments)}; takes rejected by the checks: {dict(drawn.rejected)}", flush=True)
    meta = drawn.meta
    report = {"bank": os.path.basename(a.bank), "frontend": frontend or "none",
              "threshold_side_hours": round(neg.thr_sec / 3600, 3),
              "threshold_side_speakers": len(neg.thr_names), "test_side_hours": round(neg.test_sec / 3600, 3),
              "test_side": neg.test_names if a.test_npz else f"{len(neg.test_names)} speakers",
              "enrollments": len(enrollments),
              "speakers_enrolled": len({(m["word"], m["speaker"]) for m in meta}), "draws": a.draws,
              "takes_rejected": dict(drawn.rejected), "scorers": {}}
    if conditioned(emb):
        report["conditioned_gate"] = ("each clip and take gated with the voice of 3 other clips of its own speaker "
                                      "(talker_gate.enrollment_sets): guests too, which is not the household's case "
                                      "(a guest would be gated by the household's voice); no test side")
    for kind in a.scorers:
        r = scorer_report(a, kind, spk, enrollments, meta, drawn.clip_embs, scorers, header, neg)
        report["scorers"][kind] = r
        print(kind, json.dumps(r), flush=True)
    if heads or plan.conditions:
        if "dtw" not in a.scorers:
            raise HotPhraseError("--scorers", "--generic and --condition compare against DTW: include dtw")
        report["fused"] = fused_run(a, spk, enrollments, meta, drawn.clip_embs, scorers, heads, plan, neg, frontend,
                                    report)
    return report


def scorer_report(a, kind, spk, enrollments, meta, clip_embs, scorers, header, neg):
    """One scorer: its z (chosen on the threshold side per keyword, the highest of the keywords'; DTW's with
    --bank-z the bank's), its false accepts there and on the test side, the enrolled people's misses and the guests
    heard, per keyword."""
    words = sorted({m["word"] for m in meta})
    zt = z_series(enrollments, neg.thr_streams, scorers, kind) if neg.thr_streams else None
    if a.bank_z and kind == "dtw":
        z_alone = {w: float(header["z_threshold"]) for w in words}
    else:
        z_alone = {w: choose_threshold(zt[[i for i, m in enumerate(meta) if m["word"] == w]],
                                       neg.thr_sec / 3600)[0] for w in words}
    z_th = max(z_alone.values())
    fa_thr = None
    if neg.thr_streams:
        fa_thr = float(np.mean([count_wakes(row, z_th) for row in zt])) / (neg.thr_sec / 3600)
    fa_test = np.zeros(len(enrollments))
    for raw in neg.test_streams:
        raw = np.asarray(raw, np.float32)
        if len(raw):
            z = personal(enrollments, raw, scorers, kind)
            fa_test += [count_wakes(np.where(np.isfinite(r), r, -np.inf), z_th) for r in z]
    fa_test = fa_test / (neg.test_sec / 3600) if neg.test_sec else None
    own_miss, guest_heard, per_word = [], [], {}
    for w in words:
        rows = [i for i, m in enumerate(meta) if m["word"] == w]
        names = limited(a, spk[w])
        best = heard([enrollments[i] for i in rows], [clip_embs[(w, n)] for n in names], scorers, kind)
        col = {n: j for j, n in enumerate(names)}
        v = [0, 0, 0, 0]
        for r, i in enumerate(rows):
            own = best[r, [col[n] for n in meta[i]["own"]]]
            gst = best[r, [col[n] for n in meta[i]["guests"]]]
            own_miss.append(float(np.mean(own < z_th)))
            guest_heard.append(float(np.mean(gst >= z_th)))
            v = [v[0] + int(np.sum(own < z_th)), v[1] + len(own), v[2] + int(np.sum(gst >= z_th)),
                 v[3] + len(gst)]
        per_word[w] = {"own_missed_pct": round(100 * v[0] / max(v[1], 1), 2), "own_clips": v[1],
                       "guests_heard_pct": round(100 * v[2] / max(v[3], 1), 2), "guest_clips": v[3],
                       "enrollments": len(rows), "z_threshold_alone": z_alone[w]}
    return {"z_threshold": z_th,
            "threshold_side_fa_per_hour_mean": None if fa_thr is None else round(fa_thr, 3),
            "test_side_fa_per_hour_mean": None if fa_test is None else round(float(fa_test.mean()), 3),
            "test_side_fa_per_hour_worst_enrollment": None if fa_test is None else round(float(fa_test.max()), 3),
            "test_side_enrollments_without_false_accepts_pct":
                None if fa_test is None else round(100 * float(np.mean(fa_test == 0)), 1),
            "own_clips_missed_pct_mean_over_enrollments": round(100 * float(np.mean(own_miss)), 2),
            "guest_clips_heard_pct_mean_over_enrollments": round(100 * float(np.mean(guest_heard)), 2),
            "per_word": per_word}


def fused_run(a, spk, enrollments, meta, clip_embs, scorers, heads, plan, neg, frontend, report):
    """One keyword's generic heads, personal path and fused detector at DTW's z (fused_report), clean and in every
    --condition; with --candidates-out, the candidates file too. Notes in `report` the front ends the conditions
    were rendered through when they are not this run's."""
    word = sorted({m["word"] for m in meta})[0]
    z_th = report["scorers"]["dtw"]["z_threshold"]
    clip_file = lambda d: os.path.join(d, f"e1_eval_real_{word}.npz")  # noqa: E731
    conds = {c: load_clips_npz(clip_file(d), spk[word], frontend) for c, d in plan.conditions.items()}
    clips = {n: e for (w, n), e in clip_embs.items() if w == word}
    cond_tests = {}
    if a.condition_test_side:
        for c, d in plan.conditions.items():
            streams = load_streams([os.path.join(d, os.path.basename(p)) for p in a.test_npz], frontend)
            cond_tests[c] = (streams, sum(len(x) for x in streams) * STEP_SECONDS)
    labels = {c: load_labels(clip_file(d), spk[word]) for c, d in plan.conditions.items()}
    made = {c: made_through(clip_file(d)) for c, d in plan.conditions.items()}
    if any(m != report["frontend"] for m in made.values()):  # household_conditions --oracle's renderings
        report["condition_frontends"] = made
    if a.candidates_out:
        names = limited(a, spk[word])
        clip_sets = {"clean": [clips[n] for n in names], **{c: [cm[n] for n in names] for c, cm in conds.items()}}
        sides = {"test": (neg.test_streams, {"test_npz": [os.path.abspath(p) for p in a.test_npz or []]})}
        if neg.thr_streams:
            # speaker_streams' order and joins: a speaker's files sorted, one stream each, speakers sorted
            sides["threshold"] = (neg.thr_streams, {"streams": [[os.path.abspath(f) for f in sorted(neg.thr_groups[g])]
                                                                for g in sorted(neg.thr_groups)]})
        write_candidates(a.candidates_out, word, meta, names, enrollments, scorers, clip_sets, sides,
                         a.candidate_z, z_th)
    return fused_report(word, meta, enrollments, scorers, clips, neg.test_streams, neg.test_sec, z_th, heads, conds,
                        cond_tests, labels, plan.z_grid, (neg.thr_streams, neg.thr_sec))


def pooled_z_pick(fused, target=TARGET_FA_PER_HOUR):
    """The bank's one z picked by its rule (per keyword the lowest z, searched from the top of the grid down, whose
    false accepts an hour averaged over enrollments are at most `target`; the highest of the keywords'), on sides
    larger than the threshold side alone. fused: each keyword's
    fused_report (its z_sweep rows with wakes_test_folds and wakes_threshold_side, and z_sweep_sides), all on one
    grid. Rows, in turn: picked on the threshold side alone (the shipped rule); on it and every fold but fold f,
    read on fold f (f held out); on every side at once, read on the whole test side. Each row: the side it was
    picked on, its hours, each keyword's own z, the bank's z (None where some keyword never reaches the target on
    the grid), and at that z each keyword's false accepts an hour on the side read, its misses and guests heard."""
    if not fused:
        raise HotPhraseError("pooled_z_pick", "no reports")
    sides = [r["z_sweep_sides"] for r in fused]
    if any(s["threshold_side_hours"] is None for s in sides):
        raise HotPhraseError("pooled_z_pick", "a report without a threshold side (household_eval --public)")
    grid = [row["z"] for row in fused[0]["z_sweep"]]
    if any([row["z"] for row in r["z_sweep"]] != grid for r in fused):
        raise HotPhraseError("pooled_z_pick", "the reports' z grids differ")
    k = len(sides[0]["test_fold_hours"])
    out = []
    for held in ["threshold", *range(k), "every"]:
        def there(thr, folds):
            if held == "threshold":
                return thr
            return thr + sum(x for g, x in enumerate(folds) if held == "every" or g != held)

        def read(folds):
            return sum(folds) if held in ("threshold", "every") else folds[held]
        own = []
        for r, sd in zip(fused, sides):
            hours = there(sd["threshold_side_hours"], sd["test_fold_hours"])
            pick = None
            for i in range(len(grid) - 1, -1, -1):
                row = r["z_sweep"][i]
                w = there(row["wakes_threshold_side"], row["wakes_test_folds"])
                if w / sd["enrollments"] / hours > target + 1e-12:
                    break
                pick = i
            own.append(pick)
        first = sides[0]
        hours_there = round(there(first["threshold_side_hours"], first["test_fold_hours"]), 4)
        res = {"picked_on": held, "hours_there": hours_there,
               "read_on": "test side" if held in ("threshold", "every") else f"fold {held}",
               "own_z": [None if i is None else grid[i] for i in own], "keywords": []}
        if any(i is None for i in own):
            res["z"] = None
            out.append(res)
            continue
        i = max(own)
        res["z"] = grid[i]
        for r, sd in zip(fused, sides):
            row = r["z_sweep"][i]
            res["keywords"].append({
                "fa_per_hour_read": round(read(row["wakes_test_folds"]) / sd["enrollments"]
                                          / read(sd["test_fold_hours"]), 4),
                "missed_pct": row["missed_pct"], "guests_heard_pct": row["guests_heard_pct"]})
        out.append(res)
    return out


def write_threshold(bank, reports):
    z = max(r["scorers"]["dtw"]["z_threshold"] for r in reports)
    words = sorted(w for r in reports for w in r["scorers"]["dtw"]["per_word"])
    hpmfile.update_header(bank, {"z_threshold": z, "z_threshold_measured": {
        "by": "python -m hotphrase.household_eval (BENCHMARKS.md, issue #37 part 2)",
        "rule": "the lowest z with at most 0.5 false accepts an hour on held-out speakers, averaged over a "
                "keyword's enrollments; the highest over keywords",
        "keywords": words, "enrollments": sum(r["enrollments"] for r in reports),
        "threshold_side_hours": reports[0]["threshold_side_hours"]}})
    print(f"{bank}: z_threshold {z} (keywords {', '.join(words)})")


def merge(bank, paths):
    reports = []
    for p in paths:
        with open(p) as f:
            reports.append(json.load(f))
    write_threshold(bank, reports)


def merge_z_folds(bank, paths):
    """Writes into the bank the z pooled_z_pick picks on every side of these reports (one a keyword, each run with
    --z-sweep and --public), and how it was picked; a keyword that never reaches the target is an error."""
    reports = []
    for p in paths:
        with open(p) as f:
            r = json.load(f)
        if "z_sweep_sides" not in r.get("fused", {}):
            raise HotPhraseError(p, "not a household_eval report with the z sweep's folds (--z-sweep and --public)")
        reports.append(r)
    every = pooled_z_pick([r["fused"] for r in reports])[-1]
    words = [w for r in reports for w in r["scorers"]["dtw"]["per_word"]]
    if every["z"] is None:
        raise HotPhraseError(", ".join(words), f"a keyword never reaches {TARGET_FA_PER_HOUR} false accepts an hour "
                                               f"on the sweep's grid (its own z: {every['own_z']})")
    sides = reports[0]["fused"]["z_sweep_sides"]
    hpmfile.update_header(bank, {"z_threshold": every["z"], "z_threshold_measured": {
        "by": "python -m hotphrase.household_eval --merge-z-folds (BENCHMARKS.md, issue #37 part 2, session 17)",
        "rule": "the lowest z with at most 0.5 false accepts an hour on held-out speakers, averaged over a "
                "keyword's enrollments; the highest over keywords",
        "keywords": sorted(words), "keywords_own_z": dict(zip(words, every["own_z"])),
        "z_grid": [reports[0]["fused"]["z_sweep"][0]["z"], reports[0]["fused"]["z_sweep"][-1]["z"]],
        "enrollments": sum(r["fused"]["z_sweep_sides"]["enrollments"] for r in reports),
        "threshold_side_hours": sides["threshold_side_hours"],
        "test_side_hours": round(sum(sides["test_fold_hours"]), 4)}})
    print(f"{bank}: z_threshold {every['z']} (keywords {', '.join(sorted(words))}, on {every['hours_there']} h)")


if __name__ == "__main__":
    sys.exit(main())
