"""The household's own false wakes kept as negatives (issue #37, part 2, session 7b): how fast the personal
path's false wakes on real speech fall when every one of them is kept, and what that costs in misses.

  python -m hotphraselab.household_negatives --bank share/hotphrase/negative-bank.hpm --speakers SPEAKERS.json \
         --clips-dir C/clean [--condition NAME=C/NAME ...] --test-npz C/clean/e1_eval_*.npz ... \
         [--draws 3] [--seed 37] [--shuffle-seed 1] [--wait W [--cut peak]] [--cut-frames N] [--json OUT]

- The enrollments are household_eval's (the same draws of 3 clean takes from the same seed, enrolled against the
  bank at its shipped z_threshold: sessions 2-6); the personal path only (subsequence DTW), no generic heads.
- The test side's streams (evaluate_format2's caches, each stream a run of held-out real recordings from reset)
  are replayed one after the other as one household's life, in the order given (the files, then each file's
  streams in order) and again in a shuffled order of the streams (--shuffle-seed).
- The speaker's rule (docs/household.md, "Fusion and the household's negatives"; Sources/HotPhrase/
  FusedDetector.swift and Household.addNegative): a step wakes when any template's z reaches that template's
  current threshold, with the 2 s refractory period; on real speech with no phrase every wake is false and, the
  brief's premise, heard nothing (FalseWake.heardNothing), so the last min(24, longest template) stream frames up
  to and including the wake's step become a household negative (the newest 64 kept), and every template's
  threshold becomes max(z_threshold, z_T(negative) + 0.5) over the kept negatives
  (household.negative_threshold) for every step after the wake.
- With --wait W (session 8, waiting for the peak) a wake pending at its crossing fires up to W steps later, once
  the phrase's z (the max over its templates) stops rising (decision_step); the wake's step, the refractory
  period's start and the negative's last frame are then that decision step. W = 0 is session 7b's rule. With
  --cut peak (a variant) the negative's last frame is the peak's step instead; with --cut-frames N (another)
  every negative is the last N frames (at most 24, the detector's ring) instead of min(24, longest template).
  The report's wake_events say, per replay, how long the wakes waited, how much the best z gained by the step
  they fired and up to the match's peak, and (rule on) how many of them an exact repeat of the sound would wake
  again with the thresholds their negatives left (wake_event).
- Reported per enrollment, then the mean (and worst) over enrollments: false wakes an hour in the household's first
  hour, in the rest and overall, and per hour of the replay, rule on against rule off; the same on each half of
  the test side with the negatives learned on the other half and then frozen (nothing scored on what it learned
  from); and the cost: the enrolled person's other clips missed (clean and each --condition) and guests heard
  (clean) with the thresholds the whole replay left, against without.

Where this differs from the running speaker (the numbers are the rule's, not the loop's): the DTW runs on through
a wake (the speaker resets its detector when it goes back to ready, after the no-speech timeout, 5 s by default,
and builds the new detector from the next frame: a wake is then at least 5 s after the last, and the first 2 L
frames after the reset see fewer paths), and the thresholds rise at the wake's next step (the speaker: once the
wake is known to be false and the new plan is measured); scores are float64 here, float32 in Swift.
"""
import collections
import json
import os

import numpy as np

from hotphrase import household as H
from hotphrase.constants import STEP_SECONDS
from hotphrase.errors import HotPhraseError

DOUBLE = "double"  # --cut-frames double: Household.addNegative's cut since session 8
REFRACTORY_STEPS = 25  # 2 s of 80 ms steps (household_eval.REFRACTORY_STEPS, FusedDetector's refractorySamples)
HOUR = 3600.0


# --- the replay ---------------------------------------------------------------------------------------------------

class HouseholdNegatives:
    """One enrollment's templates (centred) with their bank statistics, and the household negatives kept so far
    (centred frames) with the per-template thresholds they give."""

    def __init__(self, templates, stats, z_threshold, negatives=(), cut_frames=0):
        self.cut_frames = cut_frames if cut_frames == DOUBLE else int(cut_frames)
        self.templates = [np.asarray(t, np.float64) for t in templates]
        self.stats = list(stats)
        self.z_threshold = float(z_threshold)
        self.negatives = []
        self.thresholds = np.full(len(self.templates), self.z_threshold)
        for n in negatives:
            self.add(n)

    @property
    def window(self):
        """Session 7b's cut: the last min(24, longest template) frames; or `cut_frames` (a variant, at most the
        detector's 24-frame ring); or, with `cut_frames` DOUBLE, the speaker's since session 8
        (Household.addNegative): min(24, 2 x longest template + 1)."""
        if self.cut_frames == DOUBLE:
            return min(H.MAX_TEMPLATE_FRAMES, 2 * max(len(t) for t in self.templates) + 1)
        if self.cut_frames:
            return min(H.MAX_TEMPLATE_FRAMES, self.cut_frames)
        return min(H.MAX_TEMPLATE_FRAMES, max(len(t) for t in self.templates))

    def add(self, frames):
        """Keeps the last `window` of `frames` (centred stream frames up to and including the wake's step) as a
        negative, the newest MAX_NEGATIVES, and measures the thresholds again over every kept negative."""
        frames = np.asarray(frames, np.float64)
        self.negatives.append(frames[-self.window:])
        del self.negatives[:-H.MAX_NEGATIVES]
        self.thresholds = np.array([H.negative_threshold(self.z_threshold, t, mu, sd, self.negatives)
                                    for t, (mu, sd) in zip(self.templates, self.stats)])

    def frozen(self):
        """A copy with the same negatives and thresholds (measured once more, as a new detector's plan is)."""
        return HouseholdNegatives(self.templates, self.stats, self.z_threshold, self.negatives, self.cut_frames)


def replay_stream(z, frames, household, learn=True, refractory=REFRACTORY_STEPS, wait=0, cut="decision",
                  events=None):
    """One stream (from reset) through the rule: z [J, N] per template, frames [N, 96] centred. Returns the steps
    that woke: the decision steps (decision_step, `wait`; the crossing itself with wait 0). With `learn` each
    wake's frames up to and including its decision step become a negative of `household` (its thresholds rise for
    every later step); without, the thresholds stay as they are. The refractory period counts from the decision
    step. With `cut` "peak" (a variant, not the proposed rule) the negative's frames end at the step of the best z
    since the crossing instead: a wake that fires one step past its peak otherwise cuts the longest template's
    length from one frame too late. `events`, a list, gets one wake_event per wake."""
    z = np.asarray(z)
    best = z.max(axis=0)
    wakes, pos = [], 0
    n = z.shape[1]
    while pos < n:
        hit = np.flatnonzero((z[:, pos:] >= household.thresholds[:, None]).any(axis=0))
        if not len(hit):
            break
        i = pos + int(hit[0])
        t = H.decision_step(best, i, wait)
        wakes.append(t)
        if learn:
            e = i + int(np.argmax(best[i:t + 1])) if cut == "peak" else t
            # the detector's ring holds the last 24 raw frames heard up to the wake (FusedDetector.keepWakeFrames)
            household.add(frames[max(0, e + 1 - H.MAX_TEMPLATE_FRAMES):e + 1])
        if events is not None:
            events.append(wake_event(z, best, i, t, household.thresholds if learn else None))
        pos = t + refractory
    return wakes


def wake_event(z, best, i, t, thresholds=None):
    """What one wake (crossing at step i, fired at step t) waited for: the steps waited, the best z's gain by the
    step it fired and up to the match's peak (the first step where the best z stops rising, however long that
    takes), and, given the thresholds its negative left, whether an exact repeat of the sound (the same z series
    from the crossing to that peak) would still wake."""
    p = H.decision_step(best, i, len(best))
    p = i + int(np.argmax(best[i:p + 1]))
    ev = {"waited": int(t - i), "gain_at_fire": float(best[i:t + 1].max() - best[i]),
          "to_peak": int(p - i), "gain_to_peak": float(best[p] - best[i])}
    if thresholds is not None:
        ev["repeat_wakes"] = bool((z[:, i:p + 1] >= np.asarray(thresholds)[:, None]).any())
    return ev


def summarise_events(events):
    """The wake_events of many wakes pooled: how many, how long they waited and what for."""
    n = len(events)
    if not n:
        return {"wakes": 0}
    g = lambda k: np.array([e[k] for e in events], np.float64)  # noqa: E731
    out = {"wakes": n, "waited_mean_steps": round(float(g("waited").mean()), 3),
           "waited_hist": {int(k): int(v) for k, v in zip(*np.unique(g("waited"), return_counts=True))},
           "gain_at_fire_mean": round(float(g("gain_at_fire").mean()), 3),
           "to_peak_hist": {int(k): int(v) for k, v in zip(*np.unique(g("to_peak"), return_counts=True))},
           "gain_to_peak_mean": round(float(g("gain_to_peak").mean()), 3),
           "gain_to_peak_median": round(float(np.median(g("gain_to_peak"))), 3),
           "gain_to_peak_max": round(float(g("gain_to_peak").max()), 3)}
    if "repeat_wakes" in events[0]:
        out["exact_repeat_would_wake"] = int(sum(e["repeat_wakes"] for e in events))
    return out


def replay(zs, streams, household, order, learn=True, wait=0, cut="decision", events=None):
    """The streams in `order` as one household's life: [(time in seconds since the replay began, stream index)]
    of every wake (at its decision step, `wait`, `cut`: replay_stream); `household` keeps what it learned."""
    out, clock = [], 0.0
    for i in order:
        for t in replay_stream(zs[i], streams[i], household, learn, wait=wait, cut=cut, events=events):
            out.append((clock + (t + 1) * STEP_SECONDS, int(i)))
        clock += len(streams[i]) * STEP_SECONDS
    return out


def rates(wake_times, seconds, first=HOUR):
    """Wakes an hour in the first hour, after it, overall, and in each whole or last partial hour."""
    w = np.asarray(wake_times, np.float64)
    hours = int(np.ceil(seconds / HOUR))
    per_hour = []
    for h in range(hours):
        span = min(HOUR, seconds - h * HOUR)
        per_hour.append(float(np.sum((w >= h * HOUR) & (w < (h + 1) * HOUR))) / (span / HOUR))
    rest = max(seconds - first, 1e-9)
    return {"first_hour": float(np.sum(w < first)) / (min(first, seconds) / HOUR),
            "rest": float(np.sum(w >= first)) / (rest / HOUR),
            "overall": float(len(w)) / (seconds / HOUR), "per_hour": per_hour}


def summarise(per_enrollment):
    """{key: {"mean", "worst"}} over enrollments of rates()."""
    out = {}
    for k in ("first_hour", "rest", "overall"):
        v = np.array([r[k] for r in per_enrollment])
        out[k] = {"mean": round(float(v.mean()), 3), "worst": round(float(v.max()), 3)}
    ph = np.array([r["per_hour"] for r in per_enrollment])
    out["per_hour_mean"] = [round(float(x), 3) for x in ph.mean(axis=0)]
    out["per_hour_worst"] = [round(float(x), 3) for x in ph.max(axis=0)]
    return out


# --- the measurement ----------------------------------------------------------------------------------------------

def template_z(templates, stats, frames):
    """[J, N] z of each template over one centred stream (-inf where no path exists yet)."""
    s = H.dtw_scores(templates, frames)
    z = np.stack([H.z_scores(s[j], *stats[j]) for j in range(len(templates))])
    return np.where(np.isfinite(z), z, -np.inf).astype(np.float32)


def clip_best(templates, stats, clips, mean):
    """[J, C] each template's best z over each clip (raw embeddings, a stream from reset)."""
    out = np.full((len(templates), len(clips)), -np.inf)
    for c, raw in enumerate(clips):
        if len(raw):
            out[:, c] = template_z(templates, stats, H.centre(np.asarray(raw, np.float32), mean)).max(axis=1)
    return out


def heard_counts(best, thresholds, cols):
    """How many of the clips `cols` any template hears at its threshold."""
    if not len(cols):
        return 0
    return int(np.sum((best[:, cols] >= np.asarray(thresholds)[:, None]).any(axis=0)))


def halves(order, lengths):
    """The order cut in two where its first part reaches half the hours (streams stay whole)."""
    cum = np.cumsum([lengths[i] for i in order])
    k = int(np.searchsorted(cum, cum[-1] / 2)) + 1
    return list(order[:k]), list(order[k:])


def measure(enrollments, mean, bank_centred, z_threshold, streams, clip_sets, meta, shuffle_seed, log=print,
            wait=0, cut="decision", cut_frames=0):
    """The whole report (main's), from enrollments [(raw takes)], the test side's raw streams and the clips
    ({condition: {clip name: raw embeddings}}, "clean" first); every replay, the rule off too, wakes at its
    decision step (`wait`, `cut`: replay_stream). Every template of every enrollment is scored over
    each stream and clip in one pass (as household_eval.personal); the replays are then per enrollment.
    `cut_frames` (a variant) cuts every negative to that many frames instead of Household.addNegative's."""
    T = [[H.centre(e, mean) for e in raw] for raw in enrollments]
    flat = [t for ts in T for t in ts]
    stats = _bank_stats(flat, bank_centred)
    rows = np.cumsum([0] + [len(ts) for ts in T])
    X = [H.centre(np.asarray(s, np.float32), mean) for s in streams]
    z_all = [template_z(flat, stats, x) for x in X]
    log(f"streams scored ({len(flat)} templates)", flush=True)
    names = sorted(clip_sets["clean"])
    col = {n: j for j, n in enumerate(names)}
    best_all = {c: clip_best(flat, stats, [cm[n] for n in names], mean) for c, cm in clip_sets.items()}
    log("clips scored", flush=True)
    lengths = [len(x) for x in X]
    seconds = sum(lengths) * STEP_SECONDS
    fixed = list(range(len(X)))
    shuffled = [int(i) for i in np.random.default_rng(shuffle_seed).permutation(len(X))]
    first_half, second_half = halves(fixed, lengths)
    sec = lambda o: sum(lengths[i] for i in o) * STEP_SECONDS  # noqa: E731
    rep = {"z_threshold": z_threshold, "wait": wait, "cut": cut, "cut_frames": cut_frames, "enrollments": len(T),
           "test_side_hours": round(seconds / HOUR, 3), "streams": len(X), "order_fixed": fixed,
           "order_shuffled": shuffled,
           "halves": [first_half, second_half],
           "halves_hours": [round(sec(first_half) / HOUR, 3), round(sec(second_half) / HOUR, 3)]}
    runs = collections.defaultdict(list)
    events = collections.defaultdict(list)
    cost = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    for e, templates in enumerate(T):
        st = stats[rows[e]:rows[e + 1]]
        new = lambda: HouseholdNegatives(templates, st, z_threshold, cut_frames=cut_frames)  # noqa: E731
        zs = [z[rows[e]:rows[e + 1]] for z in z_all]
        final = {}
        for name, order, learn in (("off", fixed, False), ("on_fixed", fixed, True), ("on_shuffled", shuffled, True)):
            hh = new()
            w = replay(zs, X, hh, order, learn, wait, cut, events[name])
            runs[name].append(rates([t for t, _ in w], seconds))
            runs[name + "_wakes"].append(len(w))
            final[name] = hh
        # held out: learn on one half, then score the other with the negatives frozen
        for name, learn_on, score_on in (("second_after_first", first_half, second_half),
                                         ("first_after_second", second_half, first_half)):
            hh = new()
            replay(zs, X, hh, learn_on, True, wait, cut)
            w_on = replay(zs, X, hh.frozen(), score_on, False, wait, cut)
            w_off = replay(zs, X, new(), score_on, False, wait, cut)
            runs[name + "_on"].append(rates([t for t, _ in w_on], sec(score_on)))
            runs[name + "_off"].append(rates([t for t, _ in w_off], sec(score_on)))
        # the cost: the thresholds each whole replay left, against z_threshold
        m = meta[e]
        own, gst = [col[n] for n in m["own"]], [col[n] for n in m["guests"]]
        for cond, best in best_all.items():
            b = best[rows[e]:rows[e + 1]]
            for name in ("off", "on_fixed", "on_shuffled"):
                th = final[name].thresholds
                c = cost[cond][name + "_own_heard"]
                c[0] += heard_counts(b, th, own)
                c[1] += len(own)
                if cond == "clean":
                    g = cost[cond][name + "_guests_heard"]
                    g[0] += heard_counts(b, th, gst)
                    g[1] += len(gst)
        runs["rise"].append(float(np.max(final["on_fixed"].thresholds) - z_threshold))
        runs["negatives"].append(len(final["on_fixed"].negatives))
    rep["false_wakes_per_hour"] = {k: summarise(v) for k, v in runs.items()
                                   if k not in ("rise", "negatives") and not k.endswith("_wakes")}
    rep["wakes"] = {k[:-len("_wakes")]: {"total": int(np.sum(v)), "enrollments_with_any": int(np.sum(np.array(v) > 0)),
                                         "max": int(np.max(v)), "per_enrollment": [int(x) for x in v]}
                  for k, v in runs.items() if k.endswith("_wakes")}
    tr = np.array(runs["rise"])
    rep["on_fixed_threshold_rise"] = {"mean": round(float(tr.mean()), 3), "max": round(float(tr.max()), 3),
                                      "enrollments_raised": int(np.sum(tr > 0)),
                                      "negatives_kept_max": int(np.max(runs["negatives"]))}
    rep["wake_events"] = {k: summarise_events(v) for k, v in events.items()}
    clips = {}
    for cond, d in cost.items():
        clips[cond] = {}
        for k, (heard, of) in d.items():
            if k.endswith("_own_heard"):
                clips[cond][k.replace("_own_heard", "_own_missed")] = {"pct": round(100 * (of - heard) / max(of, 1), 2),
                                                                      "clips": of - heard, "of": of}
            else:
                clips[cond][k] = {"pct": round(100 * heard / max(of, 1), 2), "clips": heard, "of": of}
    rep["clips"] = clips
    return rep


def _bank_stats(templates, bank):
    """household_eval.Scorers.dtw_stats: every template's (mu, sd) over the bank in one DTW pass."""
    scores = [[] for _ in templates]
    for seg in bank:
        s = H.dtw_scores(templates, seg)
        for j, t in enumerate(templates):
            if len(seg) >= len(t):
                scores[j].append(s[j, len(t) - 1:])
    return [(float(np.concatenate(sc).mean()), float(np.concatenate(sc).std())) for sc in scores]


def table(rep, word):
    """Markdown rows for BENCHMARKS.md."""
    f = rep["false_wakes_per_hour"]
    cell = lambda k, p: f"{f[k][p]['mean']:.3f} ({f[k][p]['worst']:.3f})"  # noqa: E731
    off = "rule off (session 6)" if not rep.get("wait") else "rule off"
    rows = [f"| {word} | {off} | {cell('off', 'first_hour')} | {cell('off', 'rest')} | "
            f"{cell('off', 'overall')} | " + " / ".join(f"{x:.3f}" for x in f["off"]["per_hour_mean"]) + " |"]
    for k, what in (("on_fixed", "rule on, files in order"), ("on_shuffled", "rule on, streams shuffled")):
        rows.append(f"| {word} | {what} | {cell(k, 'first_hour')} | {cell(k, 'rest')} | {cell(k, 'overall')} | "
                    + " / ".join(f"{x:.3f}" for x in f[k]["per_hour_mean"]) + " |")
    held = []
    for k, what in (("second_after_first", "second half, negatives from the first"),
                    ("first_after_second", "first half, negatives from the second")):
        held.append(f"| {word} | {what} | {f[k + '_off']['overall']['mean']:.3f} ({f[k + '_off']['overall']['worst']:.3f})"
                    f" | {f[k + '_on']['overall']['mean']:.3f} ({f[k + '_on']['overall']['worst']:.3f}) |")
    c = rep["clips"]
    conds = list(c)
    cost = []
    for k, what in (("off", "rule off"), ("on_fixed", "negatives of the replay in order"),
                    ("on_shuffled", "negatives of the shuffled replay")):
        cost.append(f"| {word} | {what} | " + " | ".join(f"{c[x][k + '_own_missed']['pct']:.2f} %" for x in conds)
                    + f" | {c['clean'][k + '_guests_heard']['pct']:.2f} % |")
    return "\n".join(rows), "\n".join(held), "conditions: " + ", ".join(conds) + "\n" + "\n".join(cost)


def main(argv=None):
    from hotphrase import cli
    from hotphrase import household_eval as HE
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("--bank", required=True)
    ap.add_argument("--speakers", required=True, help="cluster_speakers' output for one keyword")
    ap.add_argument("--keywords", default=os.environ.get("HOTPHRASE_REAL_KEYWORDS",
                                                         os.path.join(HE.SHARED, "real-keywords")))
    ap.add_argument("--clips-dir", required=True, help="the clean clips (household_conditions --clean)")
    ap.add_argument("--condition", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--test-npz", nargs="+", required=True)
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--shuffle-seed", type=int, default=1)
    ap.add_argument("--wait", type=int, default=0, metavar="W",
                    help="a wake waits for its peak up to W steps (80 ms each) past the crossing (decision_step); "
                         "0, the default, fires at the crossing (session 7b's rule)")
    ap.add_argument("--cut", choices=("decision", "peak"), default="decision",
                    help="where a wake's negative ends: its decision step (the proposed rule) or, a variant, the "
                         "step of its best z (replay_stream)")
    ap.add_argument("--cut-frames", type=lambda v: v if v == DOUBLE else int(v), default=0, metavar="N|double",
                    help="a variant: every negative is the last N frames (at most the ring's 24) instead of "
                         "min(24, longest template); `double`, the speaker's since session 8: min(24, 2 x longest + 1)")
    ap.add_argument("--limit", type=int, default=0, help="a quick check: the first N enrollments only")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    header, _, mean, bank_segments = H.read_bank(a.bank)
    if "z_threshold" not in header:
        raise HotPhraseError(a.bank, "the bank's header has no z_threshold")
    word, labels = HE.one_keyword(a.speakers)
    spk = {word: labels}
    clip_sets = {"clean": HE.load_clips_npz(os.path.join(a.clips_dir, f"e1_eval_real_{word}.npz"), spk[word])}
    for c in a.condition:
        name, sep, folder = c.partition("=")
        if not sep:
            raise HotPhraseError(c, "--condition wants NAME=DIR")
        clip_sets[name] = HE.load_clips_npz(os.path.join(folder, f"e1_eval_real_{word}.npz"), spk[word])
    emb = HE.Embedder()
    drawn = HE.draw_enrollments(spk[word], os.path.join(a.keywords, word), a.seed, a.draws, emb)
    if a.limit:
        drawn = drawn[:a.limit]
    streams = HE.load_streams(a.test_npz)
    print(f"{word}: {len(drawn)} enrollments; test side {sum(len(s) for s in streams) * STEP_SECONDS / HOUR:.3f} h "
          f"in {len(streams)} streams", flush=True)
    rep = measure([d[0] for d in drawn], mean, [H.centre(s, mean) for s in bank_segments],
                  float(header["z_threshold"]), streams, clip_sets, [d[1] for d in drawn], a.shuffle_seed,
                  wait=a.wait, cut=a.cut, cut_frames=a.cut_frames)
    rep.update({"keyword": word, "bank": os.path.basename(a.bank), "test_side": [os.path.basename(p) for p in a.test_npz],
                "enrolled": [d[1]["takes"] for d in drawn]})
    for t in table(rep, word):
        print(t)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f, indent=1)


if __name__ == "__main__":
    main()
