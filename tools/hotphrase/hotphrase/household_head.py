"""A personal head beside the templates: is a scorer trained on the household's own takes, rendered in many noises
and rooms, better than subsequence DTW over the same embedding at the same false accepts, in noise and rooms? The
speaker trains such a head at enrollment (docs/household.md); fit and normalised are its reference (the household
fixture, make_household_fixture), and --head-folds' offset (household_tables) is the one it ships.

  python -m hotphrase.household_head --bank BANK --speakers SPEAKERS.json --clips-dir CLEAN
         [--condition NAME=DIR ...] --test-npz NPZ ... --sentences NPZ [--renderings SPEC] [--window W]
         [--negatives bank|bank+noise|bank+noise+sentences] [--engines ENGINE,...] [--one-draw] [--json OUT]

- Enrollments: household_eval's draws (draw_enrollments, the same rng); `--one-draw` keeps each speaker's first.
- The head, one per enrollment: logistic regression (L2, classes weighed equally) over a window of the last W
  embedding frames (each frame centred on the bank's mean and normalised, as DTW's), flattened.
  - Positives: each take, clean and as each rendering of --renderings (household_eval.render_take: training-side
    noise and procedural rooms, seeded by the take's name), the windows ending 1 step before to 2 after the take's
    last template frame (household.span_frames' end, the clean take's span).
  - Negatives, the same for every enrollment: every window of the bank's segments, of the four training noises
    alone (household_eval.enrol_banks, each 60 s), and of --sentences' first 300 utterances (training voices).
    `--negatives bank` keeps the bank's alone, and `--engines espeak` draws the babble and the sentences from
    espeak-ng's voices alone: what a speaker could make for itself at enrollment.
  Nothing of the evaluation (its speakers, noise families, rooms or test side) is in the training.
- Its score over a stream is the logit of each window ending there (-inf before W frames), as a z against its own
  negatives' logits (normalised); a wake is counted as household_eval counts one (count_wakes: greedy, 2 s
  refractory), at one threshold for every enrollment, on a grid of the own clips' best scores (grid_from).
- The templates (DTW, the takes alone, the bank's z) are scored on the same enrollments, clips and streams, and
  "both": the larger of the templates' z and the head's, at one threshold.
- Reported: the test side's false accepts an hour (mean over enrollments) and each condition's misses of the
  enrolled people's own clips (all but the takes, pooled) over a grid of thresholds, for both; and the head's
  misses at the lowest threshold whose false accepts are no more than the templates' at the bank's z. That
  threshold is read off the test side: a comparison of the two scorers at the same false accepts, not a threshold
  the speaker could pick. With --public, the head's and both's thresholds are also picked on household_eval's
  threshold side (held out from the test side and the bank) at the templates' false accepts there, and read on
  the test side; and the speaker's rule (`offset_rule`): the templates at the bank's z as always, the head beside
  them at the bank's z plus one offset, the lowest at which the pair's false accepts there are the templates'; and
  the pair at every offset (`offset_table`), with its raw wake count on the threshold side, so that the keywords'
  threshold sides can be pooled to pick the one offset the speaker ships. Each row also counts the pair's wakes
  on each half of the test side (`stream_folds`, for household_tables --head-folds: the offset picked with each
  half held out in turn, `pooled_fold_pick`) and how often it hears the guests' clips.
"""
import json
import os
import sys

import numpy as np

from . import cli
from . import frontend_registry as FR
from . import household as H
from .constants import EMB_DIM
from .errors import HotPhraseError

WINDOW = 12  # frames: 0.96 s, longer than most takes' template (median 9 frames)
SHIFTS = (-1, 0, 1, 2)  # positive windows end this many steps from the take's last template frame
L2 = 1.0  # the penalty on |w|^2 against the mean log loss of each class
SENTENCES = 300
NEGATIVES = ("bank", "bank+noise", "bank+noise+sentences")
GRID_POINTS = 300


def windows(x, w=WINDOW):
    """[N, 96] frames -> [N - w + 1, w * 96]: the window ending at each frame from the w-th on, oldest frame first."""
    x = np.asarray(x, np.float32)
    if len(x) < w:
        return np.zeros((0, w * x.shape[1]), np.float32)
    from numpy.lib.stride_tricks import sliding_window_view
    v = sliding_window_view(x, (w, x.shape[1]))[:, 0]
    return v.reshape(len(v), -1)


def last_frame(t, span, pad_samples, sample_rate):
    """The index of a padded take's last template frame (household.span_frames' rule: t_k <= e + TRIM_AFTER in the
    take's own time), or None."""
    keep = np.flatnonzero(np.asarray(t) - pad_samples <= (span[1] + H.TRIM_AFTER) * sample_rate)
    return int(keep[-1]) if len(keep) else None


def positive_windows(x, end, w=WINDOW, shifts=SHIFTS):
    """The windows of centred frames x ending at end + s for each shift that fits."""
    out = [x[e - w + 1:e + 1].reshape(-1) for e in (end + s for s in shifts) if w - 1 <= e < len(x)]
    return np.stack(out) if out else np.zeros((0, w * x.shape[1]), np.float32)


def fit(pos, neg, l2=L2):
    """Logistic regression -> (w, b): minimises the mean log loss of the positives plus that of the negatives plus
    l2 |w|^2 (L-BFGS)."""
    from scipy.optimize import minimize
    from scipy.special import log_expit
    P, N = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
    if not len(P) or not len(N):
        raise HotPhraseError("head", f"{len(P)} positive and {len(N)} negative windows: need both")
    d = P.shape[1]

    def loss(theta):
        w, b = theta[:d], theta[d]
        sp, sn = P @ w + b, N @ w + b
        f = -np.mean(log_expit(sp)) - np.mean(log_expit(-sn)) + l2 * (w @ w)
        gp = -(1 - np.exp(log_expit(sp))) / len(P)  # d/ds of -log sigmoid(s)
        gn = np.exp(log_expit(sn)) / len(N)  # d/ds of -log sigmoid(-s)
        gw = P.T @ gp + N.T @ gn + 2 * l2 * w
        return f, np.concatenate([gw, [gp.sum() + gn.sum()]])
    r = minimize(loss, np.zeros(d + 1), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return r.x[:d].astype(np.float32), float(r.x[d])


def normalised(w, b, neg):
    """The head rescaled so that its logits over the negatives have mean 0 and deviation 1: a z against them, as the
    templates' DTW score is a z against the bank, so that one threshold means the same for every enrollment."""
    s = np.asarray(neg, np.float64) @ np.asarray(w, np.float64) + b
    mu, sd = float(s.mean()), max(float(s.std()), H.SD_FLOOR)
    return (np.asarray(w, np.float64) / sd).astype(np.float32), (b - mu) / sd


def grid_from(bests, n=GRID_POINTS):
    """Thresholds where the misses change: n + 1 quantiles of the finite clip bests, rounded to 0.001, distinct."""
    v = np.concatenate([np.asarray(b, np.float64).ravel() for b in bests])
    v = v[np.isfinite(v)]
    return np.unique(np.round(np.quantile(v, np.linspace(0, 1, n + 1)), 3)) if len(v) else np.zeros(0)


def head_series(heads, x, w=WINDOW):
    """[E, N] logits of every head (weights [E, w * 96], biases [E]) over centred frames x [N, 96]; -inf where
    fewer than w frames have been heard."""
    W_, b = heads
    out = np.full((len(b), len(x)), -np.inf, np.float32)
    if len(x) >= w:
        # sum over the window's frames of x @ w_k, without building every window
        Wk = W_.reshape(len(b), w, -1)  # [E, w, 96]
        y = np.einsum("nd,ekd->enk", np.asarray(x, np.float32), Wk)  # [E, N, w]
        s = sum(y[:, k:len(x) - w + 1 + k, k] for k in range(w))
        out[:, w - 1:] = s + b[:, None]
    return out


def streams_series(series_of, streams, gap):
    """[E, total] one scorer's series over every stream from reset, streams apart by `gap` steps of -inf."""
    parts = []
    for raw in streams:
        if len(raw):
            s = series_of(raw)
            parts += [s, np.full((len(s), gap), -np.inf, np.float32)]
    return np.concatenate(parts, axis=1)


def sweep(series, clips_best, own_cols, grid, hours, count_wakes):
    """Over the grid: mean false accepts an hour over enrollments, and each condition's misses (pooled) of the own
    clips. clips_best {condition: [E, C] best score per clip}; own_cols [E] lists of clip columns."""
    rows = []
    for th in grid:
        fa = float(np.mean([count_wakes(r, th) for r in series])) / hours
        miss = {}
        for c, best in clips_best.items():
            m = sum(int(np.sum(best[e, cols] < th)) for e, cols in enumerate(own_cols))
            miss[c] = round(100 * m / max(sum(map(len, own_cols)), 1), 2)
        rows.append({"threshold": float(th), "fa_per_hour": round(fa, 4), "missed_pct": miss})
    return rows


OFFSETS = np.round(np.arange(0.0, 4.001, 0.05), 2)


def offset_rule(ht, dt, hs, ds, head_best, dtw_best, own_cols, z, target, th_hours, hours, count_wakes=None):
    """The head at z + offset beside the templates at z (a wake when either passes): the lowest offset in OFFSETS
    whose mean false accepts an hour on the threshold side (ht, dt: [E, T] series there) are at most `target`, and
    at it the test side's false accepts (hs, ds) and each condition's misses (the clips' bests). -> dict, or None
    when no offset is low enough."""
    if count_wakes is None:
        from .household_eval import count_wakes
    for off in OFFSETS:
        fa_there = float(np.mean([count_wakes(r, z) for r in np.maximum(dt, ht - off)])) / th_hours
        if fa_there <= target + 1e-12:
            best = {c: np.maximum(dtw_best[c], head_best[c] - off) for c in head_best}
            row = sweep(np.maximum(ds, hs - off), best, own_cols, [z], hours, count_wakes)[0]
            return {"offset": float(off), "fa_per_hour_threshold_side": round(fa_there, 4), **row}
    return None


def guests_heard(best, guest_cols, z):
    """{condition: % of the guests' clips (other people's clips of the keyword, each enrollment's own guests: [E]
    lists of columns) whose best score reaches z}, pooled over enrollments."""
    n = max(sum(map(len, guest_cols)), 1)
    return {c: round(100 * sum(int(np.sum(b[e, cols] >= z)) for e, cols in enumerate(guest_cols)) / n, 2)
            for c, b in best.items()}


def offset_table(ht, dt, hs, ds, head_best, dtw_best, own_cols, z, th_hours, hours, offsets=None, count_wakes=None,
                 test_folds=None, guest_cols=None):
    """The pair (templates at z, head at z + offset) at each offset: its false accepts an hour on the threshold side
    (ht, dt) and on the test side (hs, ds), and each condition's misses. The raw counts on the threshold side are
    kept too (`wakes_threshold_side`), so that keywords' sides can be pooled to pick one offset for every phrase.
    With test_folds ([(hs_f, ds_f)], the test side cut into folds of streams: `stream_folds`) each row also counts
    the pair's wakes on each fold (`wakes_test_folds`), for `pooled_fold_pick`; with guest_cols (each
    enrollment's guests' clip columns) how often the pair hears other people (`guests_heard_pct`)."""
    if count_wakes is None:
        from .household_eval import count_wakes
    rows = []
    for off in (OFFSETS if offsets is None else offsets):
        wakes = int(sum(count_wakes(r, z) for r in np.maximum(dt, ht - off)))
        best = {c: np.maximum(dtw_best[c], head_best[c] - off) for c in head_best}
        row = sweep(np.maximum(ds, hs - off), best, own_cols, [z], hours, count_wakes)[0]
        rows.append({"offset": float(off), "wakes_threshold_side": wakes,
                     "fa_per_hour_threshold_side": round(wakes / len(dt) / th_hours, 4),
                     "fa_per_hour": row["fa_per_hour"], "missed_pct": row["missed_pct"]})
        if guest_cols is not None:
            rows[-1]["guests_heard_pct"] = guests_heard(best, guest_cols, z)
        if test_folds is not None:
            rows[-1]["wakes_test_folds"] = [int(sum(count_wakes(r, z) for r in np.maximum(d, h - off)))
                                            for h, d in test_folds]
    return rows


def stream_folds(series, lengths, gap, k=2):
    """A [E, total] series in streams_series' layout (each non-empty stream's steps, then `gap`) cut into k folds of
    whole streams, interleaved (the i-th non-empty stream in fold i % k): ([k] series, [k] steps heard)."""
    parts, at = [], 0
    for n in lengths:
        if n:
            parts.append((at, at + n + gap, n))
            at += n + gap
    if at != series.shape[1]:
        raise ValueError(f"series of {series.shape[1]} steps, streams of {at}")
    folds = [[p for i, p in enumerate(parts) if i % k == f] for f in range(k)]
    return ([np.concatenate([series[:, a:b] for a, b, _ in ps], axis=1) for ps in folds],
            [sum(n for _, _, n in ps) for ps in folds])


def pooled_fold_pick(helds, extra_per_hour=0.0):
    """One offset for every phrase, picked with each fold of the test side held out in turn. helds: each keyword's
    `picked_on_the_threshold_side` from a run with folds (its `offsets` rows carry `wakes_test_folds`, and it has
    `templates_wakes_test_folds`, `test_fold_hours`, `enrollments`). For fold f: the lowest offset at which the
    pair's wakes on the threshold side and the other folds, summed over keywords, are at most the templates' alone
    there; then, on fold f, each keyword's false accepts an hour (pair and templates alone) and its misses there.
    A last row (fold None) picks on every side at once, no fold held out: the offset a speaker would ship, its false
    accepts read on the whole test side it was picked on. extra_per_hour allows the pair that many false accepts an
    hour (mean over enrollments) beyond the templates' there: with none, the pick is where the head adds not one
    wake, which climbs as the sides grow."""
    k = len(helds[0]["templates_wakes_test_folds"])
    out = []
    for f in [*range(k), None]:
        def there(w_th, w_folds):
            return w_th + sum(w for g, w in enumerate(w_folds) if g != f)

        def held_out(w_folds):
            return sum(w_folds) if f is None else w_folds[f]
        target = sum(there(h["templates_wakes_threshold_side"], h["templates_wakes_test_folds"]) for h in helds)
        allowed = target + extra_per_hour * sum(
            h["enrollments"] * there(h["threshold_side_hours"], h["test_fold_hours"]) for h in helds) + 1e-9
        offsets = [r["offset"] for r in helds[0]["offsets"]]
        pick = None
        for i, off in enumerate(offsets):
            got = sum(there(h["offsets"][i]["wakes_threshold_side"], h["offsets"][i]["wakes_test_folds"])
                      for h in helds)
            if got <= allowed:
                pick = (i, off, got)
                break
        row = {"fold": f, "templates_wakes_there": target, "wakes_allowed_there": int(allowed)}
        if pick is None:
            out.append({**row, "offset": None})
            continue
        i, off, got = pick
        row.update({"offset": off, "wakes_there": got, "keywords": []})
        for h in helds:
            hrs, n = held_out(h["test_fold_hours"]), h["enrollments"]
            r = h["offsets"][i]
            row["keywords"].append({
                "fa_per_hour_fold": round(held_out(r["wakes_test_folds"]) / n / hrs, 4),
                "templates_fa_per_hour_fold": round(held_out(h["templates_wakes_test_folds"]) / n / hrs, 4),
                "missed_pct": r["missed_pct"], **({"guests_heard_pct": r["guests_heard_pct"]}
                                                  if "guests_heard_pct" in r else {})})
        out.append(row)
    return out


def at_fa(rows, fa):
    """The first row (the grid rising) whose false accepts are at most fa, or None."""
    for r in rows:
        if r["fa_per_hour"] <= fa + 1e-12:
            return r
    return None


def swift_heads(bench, metas, model, bank, renderings, babble):
    """Each enrollment's head as the speaker trains it: `bench head` (hound-speaker-bench) over its takes (the
    drawn take_audio, as 16-bit WAVs), with `babble` (float utterances) as the renderings' voices -> ([E] weights,
    [E] biases); the CPU seconds of each printed."""
    import subprocess
    import tempfile
    import soundfile
    W_, b_, cpu = [], [], []
    with tempfile.TemporaryDirectory() as d:
        voices = []
        for k, u in enumerate(babble):
            voices.append(os.path.join(d, f"babble-{k}.wav"))
            soundfile.write(voices[-1], np.clip(np.round(np.asarray(u) * 32767), -32768, 32767).astype(np.int16), 16000)
        for e, m in enumerate(metas):
            takes = []
            for k, x in enumerate(m["take_audio"]):
                takes.append(os.path.join(d, f"take-{e}-{k}.wav"))
                soundfile.write(takes[-1], np.asarray(x, np.int16), 16000)
            out = os.path.join(d, f"head-{e}.json")
            cmd = [bench, "head", out, *takes, "--model", model, "--bank", bank, "--renderings", renderings]
            r = subprocess.run(cmd + (["--babble", *voices] if voices else []), capture_output=True, text=True)
            if r.returncode != 0:
                raise HotPhraseError(bench, f"head for enrollment {e} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
            with open(out) as f:
                h = json.load(f)
            W_.append(np.asarray(h["weights"], np.float32))
            b_.append(float(h["bias"]))
            cpu.append(h["cpu_seconds"])
            for t in takes:
                os.remove(t)
    print(f"Swift heads: {len(b_)}, CPU a head {np.mean(cpu):.2f} s (max {np.max(cpu):.2f})", flush=True)
    return W_, b_


def of_engines(utterances, meta, engines, path):
    """The utterances whose make_data meta ("engine:voice|text|...") names one of `engines` (comma-separated; None:
    all), in order; an error naming the file when fewer than SENTENCES are left."""
    if engines is None:
        return list(utterances)
    keep = {e.strip() for e in engines.split(",") if e.strip()}
    out = [u for u, m in zip(utterances, meta) if m.split(":", 1)[0] in keep]
    if len(out) < SENTENCES:
        raise HotPhraseError(path, f"{len(out)} sentences of {','.join(sorted(keep))}: need {SENTENCES} (make more "
                                   "with make_data --sentences)")
    return out


@cli.command
def main(argv=None):
    from . import dataset as D
    from . import household_eval as HE
    from .constants import SAMPLE_RATE, STEP_SECONDS
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("--bank", required=True)
    ap.add_argument("--speakers", required=True, help="cluster_speakers' output, one keyword")
    ap.add_argument("--keywords", default=os.environ.get("HOTPHRASE_REAL_KEYWORDS",
                                                         os.path.join(HE.SHARED, "real-keywords")))
    ap.add_argument("--clips-dir", required=True, help="the clean renderings (household_conditions --clean)")
    ap.add_argument("--condition", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--test-npz", nargs="+", required=True, help="household_eval's test side (false accepts)")
    ap.add_argument("--sentences", required=True, metavar="NPZ",
                    help="training sentences (WORKDIR/cache/sent_train.npz): the renderings' babble and the heads' "
                         "speech negatives")
    ap.add_argument("--renderings", default="noise0x2+noise5x2+noise10x2+noise15x2+room+room10x2+room5x2",
                    help="household_eval's variant grammar: the takes' renderings among the positives")
    ap.add_argument("--negatives", default=None, choices=NEGATIVES,
                    help="the heads' negatives: the bank's windows, and the training noises alone, and --sentences' "
                         "first 300 (default: all three); the bank alone is what a speaker has without "
                         "making any at enrollment, and the only choice (and the default) with --swift-heads")
    ap.add_argument("--engines", default=None, metavar="ENGINE,...",
                    help="only --sentences' utterances of these engines (make_data's meta, before ':'), in the "
                         "renderings' babble and in the negatives: 'espeak' is what a speaker can synthesise itself")
    ap.add_argument("--swift-heads", default=None, metavar="BENCH",
                    help="train each enrollment's head with the speaker's own code instead (BENCH: a built "
                         "hound-speaker-bench; its `head` command: Swift's renderings, the bank's windows alone as "
                         "negatives, the speaker's model --swift-model) and score it here as the others")
    ap.add_argument("--swift-model", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "share",
                                                          "hotphrase", "ok-hound.hpm"))
    ap.add_argument("--swift-babble", type=int, default=0, metavar="N",
                    help="with --swift-heads: the first N of --sentences' utterances (after --engines) as the "
                         "renderings' babble voices (0: no babble)")
    ap.add_argument("--swift-renderings", default="measured", choices=("measured", "none"))
    ap.add_argument("--window", type=int, default=WINDOW)
    ap.add_argument("--l2", type=float, default=L2)
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--one-draw", action="store_true", help="each speaker's first draw only")
    ap.add_argument("--public", default=None, metavar="DIR",
                    help="get_public_negatives' folder: with it, household_eval's threshold side (speechocean762's "
                         "training speakers not in the bank, a third of them) picks the thresholds of the head and of "
                         "both, each the lowest at which its false accepts there are at most the templates' at the "
                         "bank's z")
    ap.add_argument("--real-speech", default=os.path.join(HE.SHARED, "real-speech"))
    ap.add_argument("--cache", default=None, help="folder for the threshold side's embeddings")
    ap.add_argument("--frontend", default="none", metavar=FR.metavar(),
                    help="the front end ahead of the embedding (frontend_registry.py), as household_eval's: takes, "
                         "renderings and negatives are embedded through it; the clips and the test side must have "
                         "been made through it (household_conditions --frontend)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    if a.window < 1:
        raise HotPhraseError("--window", f"{a.window}: at least 1 frame")
    renderings = HE.parse_variant(a.renderings)
    if a.negatives is None:  # the speaker's heads know the bank alone; the measurement's default knows all three
        a.negatives = "bank" if a.swift_heads else "bank+noise+sentences"
    header, _, mean, bank_segments = H.read_bank(a.bank)
    z_bank = float(header["z_threshold"])
    word, labels = HE.one_keyword(a.speakers)
    names = sorted(labels)
    col = {n: j for j, n in enumerate(names)}
    frontend = FR.parse_frontend(a.frontend)
    emb = HE.Embedder(FR.make(frontend))
    if getattr(emb.frontend, "conditioned", False):
        raise HotPhraseError(a.frontend, "a gate conditioned on a voice is not measured here")
    scorers = HE.Scorers(mean, bank_segments)
    drawn = HE.draw_enrollments(labels, os.path.join(a.keywords, word), a.seed, a.draws, emb)
    if a.one_draw:
        drawn = [d for d in drawn if d[1]["draw"] == 0]
    if not drawn:
        raise HotPhraseError(a.speakers, f"no speaker of {word} has {HE.MIN_CLIPS} clips that pass the take checks")
    print(f"{word}: {len(drawn)} enrollments", flush=True)
    centre = lambda e: H.centre(np.asarray(e, np.float32), mean).astype(np.float32)  # noqa: E731

    # the negatives, shared
    utt = of_engines(*D.load_clips(a.sentences), a.engines, a.sentences)
    banks = HE.enrol_banks(a.sentences, utterances=utt)
    neg = [windows(centre(s), a.window) for s in bank_segments]
    if a.swift_heads and a.negatives != "bank":
        raise HotPhraseError("--swift-heads", "the speaker's heads are trained against the bank's windows alone: "
                                              "give --negatives bank")
    if "noise" in a.negatives:
        for k in sorted(banks):
            noise = np.clip(np.round(banks[k] / max(np.max(np.abs(banks[k])), 1e-9) * 0.3 * 32767), -32768, 32767)
            neg.append(windows(centre(emb(noise.astype(np.int16))[0]), a.window))
    if "sentences" in a.negatives:
        for u in utt[:SENTENCES]:
            neg.append(windows(centre(emb(np.round(np.asarray(u) * 32767).astype(np.int16))[0]), a.window))
    neg = np.concatenate(neg)
    print(f"negative windows: {len(neg)} ({a.negatives}; sentences of {a.engines or 'every engine'})", flush=True)

    # the heads
    pad = int(H.PAD_SECONDS * SAMPLE_RATE)
    def positives(y, span, _name):
        e, t = emb(y)
        end = last_frame(t, span, pad, SAMPLE_RATE)
        return (positive_windows(centre(e), end, a.window) if end is not None
                else np.zeros((0, a.window * EMB_DIM), np.float32))
    if a.swift_heads:  # the speaker's own code trains them: its renderings, positives and fit
        if a.window != WINDOW:
            raise HotPhraseError("--window", f"the speaker's head is {WINDOW} frames")
        W_, b_ = swift_heads(a.swift_heads, [m for _, m in drawn], a.swift_model, a.bank, a.swift_renderings,
                             utt[:a.swift_babble])
        print(f"heads trained by {a.swift_heads}: {len(b_)}", flush=True)
    else:
        per_enrollment, _ = HE.each_rendering([m for _, m in drawn], renderings, banks, positives, clean=True)
        W_, b_ = [], []
        for pos in per_enrollment:
            w, b = fit(np.concatenate(pos), neg, a.l2)
            w, b = normalised(w, b, neg)
            W_.append(w)
            b_.append(b)
        print(f"heads trained: {len(b_)}, positive windows a head {sum(map(len, per_enrollment[-1]))}", flush=True)
    heads = (np.stack(W_), np.array(b_, np.float32))
    enrollments = [scorers.enrol(takes) for takes, _ in drawn]

    # clips: the best of each scorer over each clip, in each condition
    conds = {"clean": a.clips_dir, **{c.partition("=")[0]: c.partition("=")[2] for c in a.condition}}
    own_cols = [[col[n] for n in m["own"]] for _, m in drawn]
    guest_cols = [[col[n] for n in m["guests"] if n in col] for _, m in drawn]
    head_best, dtw_best = {}, {}
    for c, d in conds.items():
        clips = HE.load_clips_npz(os.path.join(d, f"e1_eval_real_{word}.npz"), labels, frontend)
        hb = np.full((len(drawn), len(names)), -np.inf, np.float32)
        db = np.full_like(hb, -np.inf)
        for n in names:
            x = np.asarray(clips[n], np.float32)
            hb[:, col[n]] = head_series(heads, centre(x), a.window).max(axis=1)
            z = HE.personal(enrollments, x, scorers, "dtw")
            db[:, col[n]] = np.where(np.isfinite(z), z, -np.inf).max(axis=1)
        head_best[c], dtw_best[c] = hb, db
        print(f"{c}: scored", flush=True)

    # the test side
    streams = HE.load_streams(a.test_npz, frontend)
    hours = sum(len(x) for x in streams) * STEP_SECONDS / 3600
    hs = streams_series(lambda raw: head_series(heads, centre(raw), a.window), streams, HE.REFRACTORY_STEPS)
    ds = HE.z_series(enrollments, streams, scorers, "dtw")
    own_best = [b[e, cols] for b in head_best.values() for e, cols in enumerate(own_cols)]
    head_rows = sweep(hs, head_best, own_cols, grid_from(own_best), hours, HE.count_wakes)
    z_grid = np.round(np.arange(4.0, 9.01, 0.1), 1)
    dtw_rows = sweep(ds, dtw_best, own_cols, z_grid, hours, HE.count_wakes)
    dtw_at_bank = next(r for r in dtw_rows if abs(r["threshold"] - z_bank) < 1e-6)
    # both: the larger of the two z (the templates' against the bank, the head's against its negatives)
    both_best = {c: np.maximum(head_best[c], dtw_best[c]) for c in head_best}
    both_rows = sweep(np.maximum(hs, ds), both_best, own_cols,
                      grid_from([b[e, cols] for b in both_best.values() for e, cols in enumerate(own_cols)]),
                      hours, HE.count_wakes)
    held = {}
    if a.public:  # the thresholds picked on a held-out side, then read on the test side
        thr_groups, _ = HE.negative_groups(a.public, a.real_speech, header, a.seed)
        make = lambda: HE.speaker_streams(emb, thr_groups)  # noqa: E731
        cache = os.path.join(a.cache, f"neg-threshold{FR.tag(frontend)}.npz") if a.cache else None
        thr, _, thr_sec = HE.cached(cache, make) if cache else make()
        thr = [np.asarray(x, np.float32) for x in thr]
        th_hours = thr_sec / 3600
        ht = streams_series(lambda raw: head_series(heads, centre(raw), a.window), thr, HE.REFRACTORY_STEPS)
        dt = HE.z_series(enrollments, thr, scorers, "dtw")
        target = float(np.mean([HE.count_wakes(r, z_bank) for r in dt])) / th_hours
        held = {"threshold_side_hours": round(th_hours, 3), "templates_fa_per_hour_there": round(target, 4)}
        for name, series, rows in (("head", ht, head_rows), ("both", np.maximum(ht, dt), both_rows)):
            pick = at_fa(sweep(series, {}, own_cols, [r["threshold"] for r in rows], th_hours, HE.count_wakes),
                         target)
            held[name] = None if pick is None else next(r for r in rows if r["threshold"] == pick["threshold"])
            held[name + "_fa_per_hour_threshold_side"] = None if pick is None else pick["fa_per_hour"]
        # The speaker's rule: the templates at the bank's z as always, the head beside them at the bank's z plus
        # one offset for every enrollment, the lowest offset at which the pair's false accepts on the threshold
        # side are at most the templates' alone there; then read on the test side.
        held["offset"] = offset_rule(ht, dt, hs, ds, head_best, dtw_best, own_cols, z_bank, target, th_hours, hours)
        held["templates_wakes_threshold_side"] = int(sum(HE.count_wakes(r, z_bank) for r in dt))
        held["enrollments"] = len(dt)
        # the test side in two folds of streams, so that an offset can also be picked with one fold held out
        # (pooled_fold_pick: a threshold side of 0.63 h is a handful of wakes)
        lengths = [len(x) for x in streams]
        (hs0, hs1), steps = stream_folds(hs, lengths, HE.REFRACTORY_STEPS)
        (ds0, ds1), _ = stream_folds(ds, lengths, HE.REFRACTORY_STEPS)
        held["test_fold_hours"] = [round(n * STEP_SECONDS / 3600, 4) for n in steps]
        held["templates_wakes_test_folds"] = [int(sum(HE.count_wakes(r, z_bank) for r in d)) for d in (ds0, ds1)]
        held["offsets"] = offset_table(ht, dt, hs, ds, head_best, dtw_best, own_cols, z_bank, th_hours, hours,
                                       count_wakes=HE.count_wakes, test_folds=[(hs0, ds0), (hs1, ds1)],
                                       guest_cols=guest_cols)
        held["templates_guests_heard_pct"] = guests_heard(dtw_best, guest_cols, z_bank)
        print("held-out thresholds", json.dumps(held), flush=True)
    rep = {"keyword": word, "bank": os.path.basename(a.bank), "frontend": frontend or "none",
           "enrollments": len(drawn), "window": a.window, "l2": a.l2, "renderings": a.renderings,
           "negatives": a.negatives, "engines": a.engines,
           "swift_heads": bool(a.swift_heads), "swift_babble": a.swift_babble if a.swift_heads else None,
           "swift_renderings": a.swift_renderings if a.swift_heads else None,
           "negative_windows": int(len(neg)), "test_side_hours": round(hours, 3),
           "own_clips": sum(map(len, own_cols)), "z_bank": z_bank, "templates_at_bank_z": dtw_at_bank,
           "head_at_templates_fa": at_fa(head_rows, dtw_at_bank["fa_per_hour"]),
           "templates_at_half_an_hour": at_fa(dtw_rows, 0.5), "head_at_half_an_hour": at_fa(head_rows, 0.5),
           "both_at_templates_fa": at_fa(both_rows, dtw_at_bank["fa_per_hour"]),
           "both_at_half_an_hour": at_fa(both_rows, 0.5), "picked_on_the_threshold_side": held,
           "head_sweep": head_rows, "templates_sweep": dtw_rows, "both_sweep": both_rows}
    for k in ("templates_at_bank_z", "head_at_templates_fa", "both_at_templates_fa", "templates_at_half_an_hour",
              "head_at_half_an_hour", "both_at_half_an_hour"):
        print(k, json.dumps(rep[k]), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
