"""The personal scorer measured on real recordings (issue #37, "Honest evaluation"), and the bank's z_threshold.

  python -m hotphrase.household_eval --bank share/hotphrase/negative-bank.hpm --speakers SPEAKERS.json
         [--public DIR] [--real-speech DIR] [--keywords DIR] [--draws 3] [--json OUT] [--write-threshold]
         [--scorers dtw cos white] [--bank-z] [--generic HEAD_DIR ...] [--condition NAME=DIR ...]

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
"""
import collections
import json
import os
import sys

import numpy as np

from . import cli
from . import dataset as D
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
    """The TFLite speech_embedding with household's t_k (the Swift detector's report)."""

    def __init__(self):
        from .embedding import Frontend
        self.fe = Frontend()

    def __call__(self, samples):
        e = self.fe(np.asarray(samples, np.float32) / 32768.0)
        return e, np.array([H.step_end(k) for k in range(len(e))], np.int64)


def cached(path, make):
    if os.path.exists(path):
        z = np.load(path, allow_pickle=True)
        return list(z["streams"]), [str(s) for s in z["names"]], float(z["seconds"])
    streams, names, seconds = make()
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


def personal(enrollments, raw, scorers, kind):
    """[E, N] personal z of each enrollment over one stream of raw embeddings."""
    if kind == "dtw":
        X = H.centre(raw, scorers.mean)
        T = [t for e in enrollments for t in e["dtw"]]
        s = H.dtw_scores(T, X)
        z = np.empty_like(s)
        j = 0
        for e in enrollments:
            for (mu, sd) in e["dtw_stats"]:
                z[j] = H.z_scores(s[j], mu, sd)
                j += 1
        return z.reshape(len(enrollments), TAKES, -1).max(axis=1)
    X = H.centre(raw, scorers.mean) if kind == "cos" else scorers.whiten(raw)
    return np.stack([H.z_scores(rigid_scores(e[kind], X), *e[kind + "_stats"]) for e in enrollments])


def count_wakes(row, th):
    """Wakes of one z series at threshold th with the 2 s refractory period (greedy, as the detector). Where
    more than DENSE steps reach th the lower bound hits / 25 is returned instead (such a threshold is far above
    any target: thousands of wakes an hour)."""
    idx = np.flatnonzero(row >= th)
    if len(idx) > DENSE:
        return len(idx) / REFRACTORY_STEPS
    n, last = 0, -10 ** 9
    for i in idx:
        if i - last >= REFRACTORY_STEPS:
            n += 1
            last = i
    return n


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


def load_streams(paths):
    """The streams of the format-2 evaluation's ragged caches (emb + offsets), in order; a missing file is an error."""
    out = []
    for path in paths:
        if not os.path.exists(path):
            raise HotPhraseError(path, "missing (render it with household_conditions --test-side-...)")
        z = np.load(path)
        o = z["offsets"]
        out += [z["emb"][o[i]:o[i + 1]] for i in range(len(o) - 1)]
    return out


def load_clips_npz(path, names):
    """{clip name: raw embeddings} from an evaluate_format2-style ragged cache (emb + offsets) of a keyword folder's
    clips in sorted name order (e1_eval_real_WORD.npz, or household_conditions' renderings of the same clips)."""
    if not os.path.exists(path):
        raise HotPhraseError(path, "missing")
    z = np.load(path)
    o = z["offsets"]
    if len(o) - 1 != len(names):
        raise HotPhraseError(path, f"holds {len(o) - 1} clips, the speakers file {len(names)}")
    return {n: z["emb"][o[i]:o[i + 1]] for i, n in enumerate(sorted(names))}


def false_accepts(enrollments, scorers, streams, z_th, heads):
    """Wakes on the streams: (personal [E], generic {head: n}, fused {head: [E]})."""
    fa_personal = np.zeros(len(enrollments))
    fa_generic = {h[0]: 0 for h in heads}
    fa_fused = {h[0]: np.zeros(len(enrollments)) for h in heads}
    for raw in streams:
        raw = np.asarray(raw, np.float32)
        if not len(raw):
            continue
        z = personal(enrollments, raw, scorers, "dtw")
        z = np.where(np.isfinite(z), z, -np.inf)
        fa_personal += [count_wakes(r, z_th) for r in z]
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


def fused_report(word, meta, enrollments, scorers, clips, test_streams, test_sec, z_th, heads, conditions,
                 condition_tests=None):
    """Generic alone, personal alone (DTW at z_th) and fused, on the same enrollments, clips and test side.
    heads: [(name, head, arrays, threshold)]; conditions: {name: {clip name: raw embeddings}} (every clip
    rendered in noise or rooms; enrollment stays clean): the enrolled people's misses and the guests heard there;
    condition_tests: {name: (streams, seconds)}, the test side rendered in that condition: false accepts there.
    Missed and heard are pooled over the enrollments (each enrollment's own clips and guests, as per_word
    above)."""
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
    fa_personal, fa_generic, fa_fused = false_accepts(enrollments, scorers, test_streams, z_th, heads)
    pbest, gbest = best_over(clips)
    rep["personal"] = outcomes(pbest, None, None)["personal"]
    rep["personal"].update({"test_fa_per_hour_mean": round(float(fa_personal.mean()) / hours, 3),
                            "test_fa_per_hour_worst_enrollment": round(float(fa_personal.max()) / hours, 3)})
    cond_best = {c: best_over({n: cm[n] for n in names}) for c, cm in conditions.items()}
    rep["conditions"] = {c: {"personal": outcomes(pb, None, None)["personal"]} for c, (pb, _) in cond_best.items()}
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


# --- the measurement ----------------------------------------------------------------------------------------------

@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
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
    ap.add_argument("--limit", type=int, default=0, help="a quick check: only N speakers a negative side and 10 N "
                                                         "clips a keyword (never with --write-threshold)")
    a = ap.parse_args(argv)
    if a.merge:
        return merge(a.bank, a.merge)
    public = a.public or default_public_dir()
    header, _, mean, bank_segments = H.read_bank(a.bank)
    if a.bank_z and "z_threshold" not in header:
        raise HotPhraseError(a.bank, "--bank-z: the bank's header has no z_threshold")
    if a.bank_z and a.write_threshold:
        raise HotPhraseError("--bank-z", "scores at the bank's threshold; it cannot also write one")
    if a.condition and not a.clips_dir:
        raise HotPhraseError("--condition", "needs --clips-dir (the clean clips the conditions are renderings of)")
    if a.condition_test_side and not (a.condition and a.test_npz):
        raise HotPhraseError("--condition-test-side", "needs --condition and --test-npz (the files rendered in it)")
    conditions_dirs = {}
    for c in a.condition:
        name, sep, folder = c.partition("=")
        if not sep or not name or not folder:
            raise HotPhraseError(c, "--condition wants NAME=DIR")
        conditions_dirs[name] = folder
    heads = []
    for d in a.generic:
        from . import embedding as E
        head, arrays = E.load_head(d)
        heads.append((os.path.basename(os.path.normpath(d)), head, arrays, generic_threshold(d)))
    if not a.speakers:
        raise HotPhraseError("--speakers", "needed (cluster_speakers' output), except with --merge")
    emb = Embedder()
    scorers = Scorers(mean, bank_segments)
    thr_groups, test_groups = negative_groups(public, a.real_speech, header, a.seed)
    if a.limit:
        if a.write_threshold:
            raise HotPhraseError("--limit", "a quick check never sets the bank's threshold")
        thr_groups = dict(sorted(thr_groups.items())[:a.limit])
        test_groups = dict(sorted(test_groups.items())[:a.limit])

    def negatives(name, groups):
        make = lambda: speaker_streams(emb, groups)  # noqa: E731
        if a.cache and not a.limit:
            os.makedirs(a.cache, exist_ok=True)
            return cached(os.path.join(a.cache, f"neg-{name}.npz"), make)
        return make()
    thr_streams, thr_names, thr_sec = negatives("threshold", thr_groups)
    if a.test_npz:
        test_streams = load_streams(a.test_npz)
        test_names = [os.path.basename(p) for p in a.test_npz]
        test_sec = sum(len(x) for x in test_streams) * STEP_SECONDS
    else:
        test_streams, test_names, test_sec = negatives("test", test_groups)
    test_what = f"{len(test_names)} cache files" if a.test_npz else f"{len(test_names)} speakers"
    print(f"negatives: threshold side {thr_sec / 3600:.2f} h ({len(thr_names)} speakers), test side "
          f"{test_sec / 3600:.2f} h ({test_what})", flush=True)

    if a.negatives_only:
        return
    with open(a.speakers) as f:
        spk = json.load(f)["keywords"]
    if (heads or conditions_dirs) and len(spk) != 1:
        raise HotPhraseError(a.speakers, f"--generic and --condition need one keyword's speakers, not {sorted(spk)}")
    rng = np.random.default_rng(a.seed)
    enrollments, meta, clip_embs, rejected = [], [], {}, collections.Counter()
    for word in sorted(spk):
        folder = os.path.join(a.keywords, word)
        by_spk = collections.defaultdict(list)
        audio, passed = {}, set()
        names_all = sorted(spk[word])[:10 * a.limit or None]
        cached_clips = None
        if a.clips_dir:
            cached_clips = load_clips_npz(os.path.join(a.clips_dir, f"e1_eval_real_{word}.npz"), spk[word])
        for n in names_all:
            x = np.round(D.read_audio(os.path.join(folder, n)) * 32767).astype(np.int16)
            audio[n] = x
            try:
                H.check_take(x, n)
                passed.add(n)
            except H.TakeError as e:
                rejected[e.kind] += 1
            if cached_clips is not None:
                clip_embs[(word, n)] = cached_clips[n]
            else:
                pad = np.concatenate([np.zeros(SAMPLE_RATE, np.int16), x, np.zeros(SAMPLE_RATE // 2, np.int16)])
                clip_embs[(word, n)] = emb(pad)[0]
            by_spk[spk[word][n]].append(n)
        takes = {}
        for lab, names in sorted(by_spk.items()):
            ok = [n for n in names if n in passed]
            if len(ok) < MIN_CLIPS:
                continue
            for d in range(a.draws):
                pick = list(rng.choice(ok, TAKES, replace=False))
                for n in pick:
                    if n not in takes:
                        try:
                            takes[n] = H.template_frames(None, None, audio[n], n, embedder=emb)[0]
                        except H.TakeError:
                            # fewer than 4 frames in the span: "no speech found" after embedding
                            takes[n] = None
                if any(takes[n] is None for n in pick):
                    rejected["no speech found (frames)"] += 1
                    continue
                enrollments.append([takes[n] for n in pick])
                meta.append({"word": word, "speaker": int(lab), "draw": d, "takes": pick,
                             "own": [n for n in names if n not in pick],
                             "guests": [n for n in names_all if spk[word][n] != lab]})
        print(f"{word}: {len(by_spk)} speakers, {sum(1 for m in meta if m['word'] == word)} enrollments",
              flush=True)
    stats = scorers.dtw_stats([H.centre(e, scorers.mean) for raw in enrollments for e in raw])
    enrollments = [scorers.enrol(raw, stats[TAKES * i:TAKES * (i + 1)]) for i, raw in enumerate(enrollments)]
    print(f"enrollments: {len(enrollments)}; takes rejected by the checks: {dict(rejected)}", flush=True)

    report = {"bank": os.path.basename(a.bank), "threshold_side_hours": round(thr_sec / 3600, 3),
              "threshold_side_speakers": len(thr_names), "test_side_hours": round(test_sec / 3600, 3),
              "test_side": test_names if a.test_npz else f"{len(test_names)} speakers", "enrollments": len(enrollments),
              "speakers_enrolled": len({(m["word"], m["speaker"]) for m in meta}), "draws": a.draws,
              "takes_rejected": dict(rejected), "scorers": {}}
    words = sorted({m["word"] for m in meta})
    for kind in a.scorers:
        zt = z_series(enrollments, thr_streams, scorers, kind)
        if a.bank_z and kind == "dtw":
            z_alone = {w: float(header["z_threshold"]) for w in words}
        else:
            z_alone = {w: choose_threshold(zt[[i for i, m in enumerate(meta) if m["word"] == w]],
                                           thr_sec / 3600)[0] for w in words}
        z_th = max(z_alone.values())
        fa_thr = float(np.mean([count_wakes(row, z_th) for row in zt])) / (thr_sec / 3600)
        fa_test = np.zeros(len(enrollments))
        for raw in test_streams:
            raw = np.asarray(raw, np.float32)
            if len(raw):
                z = personal(enrollments, raw, scorers, kind)
                fa_test += [count_wakes(np.where(np.isfinite(r), r, -np.inf), z_th) for r in z]
        fa_test /= test_sec / 3600
        own_miss, guest_heard, per_word = [], [], {}
        for w in words:
            rows = [i for i, m in enumerate(meta) if m["word"] == w]
            names = sorted(spk[w])[:10 * a.limit or None]
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
        r = {"z_threshold": z_th,
             "threshold_side_fa_per_hour_mean": round(fa_thr, 3),
             "test_side_fa_per_hour_mean": round(float(fa_test.mean()), 3),
             "test_side_fa_per_hour_worst_enrollment": round(float(fa_test.max()), 3),
             "test_side_enrollments_without_false_accepts_pct": round(100 * float(np.mean(fa_test == 0)), 1),
             "own_clips_missed_pct_mean_over_enrollments": round(100 * float(np.mean(own_miss)), 2),
             "guest_clips_heard_pct_mean_over_enrollments": round(100 * float(np.mean(guest_heard)), 2),
             "per_word": per_word}
        report["scorers"][kind] = r
        print(kind, json.dumps(r), flush=True)
    if heads or conditions_dirs:
        if "dtw" not in a.scorers:
            raise HotPhraseError("--scorers", "--generic and --condition compare against DTW: include dtw")
        word = words[0]
        z_th = report["scorers"]["dtw"]["z_threshold"]
        conds = {c: load_clips_npz(os.path.join(d, f"e1_eval_real_{word}.npz"), spk[word])
                 for c, d in conditions_dirs.items()}
        clips = {n: e for (w, n), e in clip_embs.items() if w == word}
        cond_tests = {}
        if a.condition_test_side:
            for c, d in conditions_dirs.items():
                streams = load_streams([os.path.join(d, os.path.basename(p)) for p in a.test_npz])
                cond_tests[c] = (streams, sum(len(x) for x in streams) * STEP_SECONDS)
        report["fused"] = fused_report(word, meta, enrollments, scorers, clips,
                                       test_streams, test_sec, z_th, heads, conds, cond_tests)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    if a.write_threshold:
        write_threshold(a.bank, [report])


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


if __name__ == "__main__":
    sys.exit(main())
