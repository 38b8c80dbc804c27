"""Answered wakes learned in the household's own room (issue #37, part 2, session 7): what the speaker's "answered
wakes strengthen the enrollment" (docs/household.md, "Answered wakes"; Household.learn in
Sources/HotPhrase/Household.swift) does for a person heard across the room, measured as the speaker does it.

  python -m hotphraselab.household_learning --bank BANK --speakers SPEAKERS.json --clips-dir CLEAN
         --learn-in house-room=DIR house-room-snr10=DIR [--condition NAME=DIR ...] --test-npz NPZ ... [--json OUT]
         [--learn-through all|takes] [--wait STEPS] [--frontend FE]
  python -m hotphraselab.household_learning --tables OUT.json ...

- Enrollments: household_eval's, the same draws (--draws of 3 clean takes per speaker with at least 6 clips that
  pass the take checks, --seed; household_eval.enrollment_draws repeats its drawing exactly).
- Each enrollment's speaker's other clips (household_eval's "own", in sorted name order) are split: the first half
  (floor) is the LEARN half, the weeks of use; the rest the TEST half.
- The learn half is streamed in that order, clip j rendered as the --learn-in conditions in turn (j even: the first,
  j odd: the second; household_conditions --house renders each clip in its speaker's own room). Each clip, from
  reset, runs through the enrollment's templates (takes and those learned so far) as FusedDetector's personal path
  does: the first frame where a template's z reaches the z threshold is a wake, and its frames are the last 24 raw
  frames up to and including that one (FusedDetector.keepWakeFrames). Every wake is taken as answered (the person
  asked something and Houndify heard words); a clip the templates miss teaches nothing. The wake's frames then go
  through Household.learn (learn below): the templates run over them from reset, and where the best z reaches the
  threshold, frames start...t of its path become a learned template measured against the bank, the newest 4 kept.
- `--z Z`: the speaker at another sensitivity, whose running z (the wake and the learning) is Z; the z on the grid
  is then the lowest from Z up at which takes + learned are back at the takes' false accepts at the bank's z.
- The test half is scored clean (--clips-dir) and in each --condition (and the --learn-in conditions), with the
  takes alone and with the takes and the learned templates; false accepts on the --test-npz streams (household_eval's
  test side) with both; the lowest z on a 0.1 grid at which the learned set's false accepts an hour (mean over
  enrollments) are no more than the takes' at the bank's z, and the misses there; guests (other speakers' clips,
  clean) heard by both.

Where this differs from the Swift rule: scores are float64 here (Float in Swift); the wake uses the bank's z for
every template (no household negatives, as this household has none); each clip is its own stream from reset (its 2 s
lead-in of noise is longer than any template's path).

`--frontend` (session 10): as household_eval's, every take, rendering and test-side stream through one front end.

`--enrol-variants SPEC` (session 13): multi-condition enrollment (household_eval's, session 4) under the learning:
each take's renderings (rendered_takes) are enrolled beside it and count as takes everywhere here: in the wake, in
the cut (--learn-through takes), and in the "takes" columns; each rendering goes through --frontend as its take does.
"""
import collections
import json
import os
import sys

import numpy as np

from hotphrase import cli
from hotphrase import frontend_registry as FR
from hotphrase import household as H
from hotphrase.errors import HotPhraseError

from . import frontends

LEARNED_KEPT = 4  # Household.learnedKept
WAKE_FRAMES = H.MAX_TEMPLATE_FRAMES  # FusedDetector keeps the last Enrollment.maxFrames raw frames
Z_SWEEP = np.round(np.arange(5.0, 12.05, 0.1), 1)


# --- the rule, as Sources/HotPhrase does it -------------------------------------------------------------------------

class PathDtw:
    """SubsequenceDTW.swift: H.Dtw's streaming recursion, each cell also carrying the stream frame its best path
    started on (predecessors compared in the page's order, the first kept on ties), so that `last_start` is where
    the path ending at the template's last frame on the newest frame began."""

    def __init__(self, template):
        self.T = np.asarray(template, np.float64)
        self.L = len(self.T)
        self.reset()

    def reset(self):
        self.d1 = np.full(self.L, np.inf)
        self.d2 = np.full(self.L, np.inf)
        self.s1 = np.zeros(self.L, np.int64)
        self.s2 = np.zeros(self.L, np.int64)
        self.frames = 0
        self.last_start = 0

    def step(self, x):
        c = 1.0 - self.T @ np.asarray(x, np.float64)
        d, s = np.empty(self.L), np.zeros(self.L, np.int64)
        d[0], s[0] = c[0], self.frames
        for i in range(1, self.L):
            best, start = self.d1[i - 1], self.s1[i - 1]
            if self.d2[i - 1] < best:
                best, start = self.d2[i - 1], self.s2[i - 1]
            if i >= 2 and self.d1[i - 2] + c[i - 1] < best:
                best, start = self.d1[i - 2] + c[i - 1], self.s1[i - 2]
            d[i], s[i] = c[i] + best, start
        self.d2, self.d1, self.s2, self.s1 = self.d1, d, self.s1, s
        self.frames += 1
        self.last_start = int(s[self.L - 1])
        return d[self.L - 1] / self.L


def best_match(templates, frames):
    """Household.bestMatch: (z, start, end) of the best z of `templates` (dicts with centred frames "x", "mu", "sd")
    over `frames` (centred), each template run as one stream from reset; the first strict maximum in template order,
    then frame order."""
    best = (-np.inf, 0, 0)
    for t in templates:
        dtw = PathDtw(t["x"])
        for k, f in enumerate(frames):
            s = dtw.step(f)
            z = (t["mu"] - s) / max(t["sd"], H.SD_FLOOR) if np.isfinite(s) else -np.inf
            if z > best[0]:
                best = (float(z), dtw.last_start, k)
    return best


def learn_cut(templates, raw, mean, z_threshold):
    """Household.learn up to the measuring: (what, cut, frames) where what is "learned" (cut: the raw frames
    start...end of the best path), "not enrolled" (no take among the templates), "templates did not hear" (best z
    below the threshold) or "match size" (the cut outside 4-24 frames); cut is None but for "learned"; frames the
    path's length (None before a match)."""
    if not any(not t["learned"] for t in templates):
        return "not enrolled", None, None
    z, start, end = best_match(templates, H.centre(raw, mean))
    if z < z_threshold:
        return "templates did not hear", None, None
    cut = np.asarray(raw)[start:end + 1]
    if not H.MIN_TEMPLATE_FRAMES <= len(cut) <= H.MAX_TEMPLATE_FRAMES:
        return "match size", None, len(cut)
    return "learned", cut, len(cut)


def keep_learned(templates, new):
    """Appends a learned template and drops the oldest learned ones beyond LEARNED_KEPT (the takes stay)."""
    out = list(templates) + [new]
    learned = [i for i, t in enumerate(out) if t["learned"]]
    drop = set(learned[:max(0, len(learned) - LEARNED_KEPT)])
    return [t for i, t in enumerate(out) if i not in drop]


def template(raw, mean, mu, sd, learned):
    raw = np.asarray(raw, np.float32)
    return {"raw": raw, "x": H.centre(raw, mean), "mu": float(mu), "sd": float(sd), "learned": bool(learned)}


def z_rows(templates, frames):
    """[J, N] z of each template over centred frames (one stream from reset), -inf where no path exists yet."""
    s = H.dtw_scores([t["x"] for t in templates], frames)
    z = np.stack([H.z_scores(s[j], t["mu"], t["sd"]) for j, t in enumerate(templates)])
    return np.where(np.isfinite(z), z, -np.inf)


def first_wake(templates, raw, mean, z_threshold, wait=0):
    """FusedDetector's personal path over one clip from reset: the raw frames kept at its first wake (the last
    WAKE_FRAMES up to and including the frame the wake fires on), or None. The wake is pending from the first
    frame where a template's z reaches the threshold and fires where household.decision_step says: there with
    `wait` 0 (the rule session 7 measured), one frame past the peak of the phrase's z or `wait` frames on
    otherwise (the speaker's since session 8, FusedDetector.peakWaitSteps = household.PEAK_WAIT_STEPS)."""
    z = z_rows(templates, H.centre(raw, mean)).max(axis=0)
    hit = np.flatnonzero(z >= z_threshold)
    if not len(hit):
        return None
    k = H.decision_step(z, int(hit[0]), wait)
    return np.asarray(raw)[max(0, k + 1 - WAKE_FRAMES):k + 1]


def learn_half(households, learn_clips, mean, z_threshold, measure, through_takes=False, wait=0):
    """Streams every household's learn clips in order (households: one list of templates per enrollment;
    learn_clips: one list of raw clips per enrollment, already rendered) through first_wake and learn_cut; every
    wake is answered. Clip j of every household is done in one round, whose new templates are measured together
    (`measure(list of raw cuts) -> [(mu, sd)]`: the bank's statistics; a template learned in round j is in the
    detector from round j + 1, as the speaker swaps its detector after an answered wake). Returns the households
    after learning, per household the outcome of each clip ("missed" or learn_cut's what), and the lengths of
    the paths cut ({what: Counter of frames}). `through_takes` (--learn-through takes; the speaker's rule since this
    measurement, Household.learn): the wake's frames are matched by the takes alone, so a learned template is never
    cut from another's path. Without it, every template cuts (the speaker's rule when session 7 measured it)."""
    households = [list(h) for h in households]
    outcomes = [[] for _ in households]
    lengths = collections.defaultdict(collections.Counter)
    for j in range(max((len(c) for c in learn_clips), default=0)):
        cuts = []
        for e, clips in enumerate(learn_clips):
            if j >= len(clips):
                continue
            frames = first_wake(households[e], clips[j], mean, z_threshold, wait)
            if frames is None:
                outcomes[e].append("missed")
                continue
            by = [t for t in households[e] if not t["learned"]] if through_takes else households[e]
            what, cut, n = learn_cut(by, frames, mean, z_threshold)
            outcomes[e].append(what)
            if n is not None:
                lengths[what][n] += 1
            if cut is not None:
                cuts.append((e, cut))
        stats = measure([c for _, c in cuts]) if cuts else []
        for (e, cut), (mu, sd) in zip(cuts, stats):
            households[e] = keep_learned(households[e], template(cut, mean, mu, sd, learned=True))
    return households, outcomes, lengths


def split_own(own):
    """(learn half, test half) of a speaker's other clips in their order: the first floor(n / 2) learn."""
    return own[:len(own) // 2], own[len(own) // 2:]


def alternate(j, conditions):
    """The --learn-in condition of learn clip j: the conditions in turn."""
    return conditions[j % len(conditions)]


# --- household_eval's enrollments, the same draws ----------------------------------------------------------------

def rendered_takes(metas, renderings, banks, embedder):
    """Multi-condition enrollment (household_eval --enrol-variants, session 4) for each drawn enrollment: every take
    rendered as each of `renderings` (household_eval.parse_variant; household_eval.each_rendering), its frames kept
    by the clean take's span (household.span_frames). -> ([E] lists of raw templates, in household_remedies.Remedies'
    order: take by take, each take's renderings in turn; Counter of what was drawn)."""
    from hotphrase import household_eval as HE
    return HE.each_rendering(
        metas, renderings, banks,
        lambda y, span, n: np.asarray(H.span_frames(None, None, y, span, n, embedder)[0], np.float32))


# --- the measurement ------------------------------------------------------------------------------------------------

def best_split(households, clip, mean):
    """([E] best z of the takes, [E] best z of the learned templates; -inf where none) over one raw clip."""
    flat = [t for h in households for t in h]
    z = z_rows(flat, H.centre(np.asarray(clip, np.float32), mean)).max(axis=1)
    takes, learned, j = np.full(len(households), -np.inf), np.full(len(households), -np.inf), 0
    for e, h in enumerate(households):
        for t in h:
            if t["learned"]:
                learned[e] = max(learned[e], z[j])
            else:
                takes[e] = max(takes[e], z[j])
            j += 1
    return takes, learned


def stream_series(households, streams, mean, gap):
    """([E, steps] the takes' z, [E, steps] the learned templates' z) over every stream (each from reset), streams
    apart by `gap` steps of -inf (household_eval.z_series)."""
    flat = [t for h in households for t in h]
    owner = np.array([e for e, h in enumerate(households) for _ in h])
    is_learned = np.array([t["learned"] for h in households for t in h])
    zt, zl = [], []
    pad = np.full((len(households), gap), -np.inf, np.float32)
    for raw in streams:
        raw = np.asarray(raw, np.float32)
        if not len(raw):
            continue
        z = z_rows(flat, H.centre(raw, mean)).astype(np.float32)
        a = np.full((len(households), len(raw)), -np.inf, np.float32)
        b = a.copy()
        for e in range(len(households)):
            rows = z[(owner == e) & ~is_learned]
            if len(rows):
                a[e] = rows.max(axis=0)
            rows = z[(owner == e) & is_learned]
            if len(rows):
                b[e] = rows.max(axis=0)
        zt += [a, pad]
        zl += [b, pad]
    return np.concatenate(zt, axis=1), np.concatenate(zl, axis=1)


def fa_per_hour(series, z, hours, count_wakes):
    counts = np.array([count_wakes(row, z) for row in series], np.float64)
    return counts / hours


def z_returning(fa_takes_mean, combined, hours, count_wakes, start, grid=Z_SWEEP):
    """The lowest z on the grid, from `start` up, at which the combined series' false accepts an hour (mean over
    enrollments) are no more than `fa_takes_mean`; (z, that mean), or (None, None) when none on the grid is."""
    for z in grid[grid >= start - 1e-9]:
        fa = float(fa_per_hour(combined, z, hours, count_wakes).mean())
        if fa <= fa_takes_mean + 1e-12:
            return float(z), fa
    return None, None


def pooled(best, rows, z):
    """Missed pct of pooled clips: best [(E, C)] z, rows [(e, [clip columns])]."""
    miss = tot = 0
    for e, cols in rows:
        miss += int(np.sum(best[e, cols] < z))
        tot += len(cols)
    return round(100 * miss / max(tot, 1), 2), tot


def by_label(best, rows, z, labels, names):
    """{noise family or room: missed pct} of pooled clips, from household_conditions' labels ("rt0.4_2m+babble")."""
    tot = collections.defaultdict(lambda: [0, 0])
    for e, cols in rows:
        for c in cols:
            for part in labels[names[c]].split("+"):
                key = part.split("_")[0] if part.startswith("rt") else part
                tot[key][0] += int(best[e, c] < z)
                tot[key][1] += 1
    return {k: round(100 * m / max(n, 1), 1) for k, (m, n) in sorted(tot.items())}


COLUMNS = ("clean", "house-room", "house-room-snr10", "snr10", "room", "room-snr10")


def median_frames(counter):
    n = sorted(int(k) for k, v in counter.items() for _ in range(v))
    return n[len(n) // 2] if n else None


def variant(report):
    """A table label's tail: whether the wakes waited for their peak (--wait), the multi-condition enrollment
    (--enrol-variants), and the front end (--frontend; a model file by its name)."""
    out = f", the wake waiting {report['wait']} steps" if report.get("wait", 0) else ""
    if report.get("enrol_variants", "clean") != "clean":
        out += f", enrolled {report['enrol_variants']}"
    fe = report.get("frontend", "none")
    if fe != "none":
        head, _, path = fe.partition(":")
        out += f", through {head}:{os.path.basename(path)}" if head in frontends.MODEL_FRONTENDS else f", through {fe}"
    return out


def tables(reports):
    """BENCHMARKS.md's tables (issue #37, part 2, session 7) from the --json reports, as markdown: those run at the
    bank's z first, then (a fourth table) those run with --z."""
    moved = [r for r in reports if r["z_threshold"] != r.get("z_bank", r["z_threshold"])]
    reports = [r for r in reports if r not in moved]
    out = ["| keyword | templates | z | " + " | ".join(COLUMNS) + " | guests heard (clean) | FA/h test side |",
           "|---|---|---|" + "---|" * len(COLUMNS) + "---|---|"]
    for r in reports:
        zs = [r["z_threshold"]] + ([r["z_back"]] if r["z_back"] not in (None, r["z_threshold"]) else [])
        through = "learned" if r.get("learn_through", "all") == "all" else "learned through the takes"
        rows = [("takes", "takes")] if r.get("learn_through", "all") == "all" else []
        rows.append((f"takes + {through}{variant(r)}", "takes+learned"))
        for z in zs:
            key = f"{z:.1f}"
            for name, k in rows:
                if z == r["z_threshold"]:
                    fa = r["fa_per_hour"][k]
                else:
                    fa = r["fa_sweep"][key][k]
                miss = " | ".join(f"{r['misses'][c][key][k]:.2f} %" for c in COLUMNS)
                out.append(f"| {r['keyword']} | {name} | {key} | {miss} | {r['guests'][key][k]:.2f} % | "
                           f"{fa[0]:.3f} ({fa[1]:.3f}) |")
    out += ["", "| keyword | templates | learn clips | heard in house-room | heard in house-room-snr10 | learned | "
                "not learned: path of 3 frames | not learned: templates did not hear | learned kept per enrollment "
                "(0/1/2/3/4) | frames: takes / learned (median) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in reports:
        by = r["learn_outcomes_by_condition"]
        heard = {c: 100 * (1 - v.get("missed", 0) / max(sum(v.values()), 1)) for c, v in by.items()}
        kept = "/".join(str(r["learned_kept_per_enrollment"].get(str(i), 0)) for i in range(LEARNED_KEPT + 1))
        through = "all (the rule measured first)" if r.get("learn_through", "all") == "all" else "the takes alone"
        through += variant(r)
        out.append(f"| {r['keyword']} | {through} | {r['learn_clips']} | {heard.get('house-room', 0):.1f} % | "
                   f"{heard.get('house-room-snr10', 0):.1f} % | {r['learn_outcomes'].get('learned', 0)} | "
                   f"{r['learn_outcomes'].get('match size', 0)} | "
                   f"{r['learn_outcomes'].get('templates did not hear', 0)} | {kept} | {median_frames(r['take_frames'])} / "
                   f"{median_frames(r['path_frames'].get('learned', {}))} |")
    out += ["", "| keyword | templates | house-room: RT60 0.2 / 0.4 / 0.6 / 0.8 s | house-room-snr10: fan / street / "
                "music / babble | house-room-snr10: RT60 0.2 / 0.4 / 0.6 / 0.8 s |", "|---|---|---|---|---|"]
    for r in reports:
        rows = [("takes", "takes")] if r.get("learn_through", "all") == "all" else []
        rows.append(("takes + learned" + ("" if r.get("learn_through", "all") == "all" else " through the takes")
                     + variant(r), "takes+learned"))
        for name, k in rows:
            hr, hn = r["misses_by_rendering"]["house-room"][k], r["misses_by_rendering"]["house-room-snr10"][k]
            rt = lambda d: " / ".join(f"{d[f'rt{x}']:.1f}" for x in ("0.2", "0.4", "0.6", "0.8"))  # noqa: E731
            fam = " / ".join(f"{hn[f]:.1f}" for f in ("fan", "street", "music_plucks", "babble"))
            out.append(f"| {r['keyword']} | {name} | {rt(hr)} | {fam} | {rt(hn)} |")
    if moved:
        out += ["", "| keyword | running z | learned | FA/h takes + learned | FA/h takes at the bank's z | " + " | ".join(COLUMNS)
                + " | guests heard (clean) |", "|---|---|---|---|---|" + "---|" * len(COLUMNS) + "---|"]
        for r in moved:
            key = f"{r['z_threshold']:.1f}"
            fa, ref = r["fa_per_hour"]["takes+learned"], r["fa_per_hour_takes_at_bank_z"]
            miss = " | ".join(f"{r['misses'][c][key]['takes+learned']:.2f} %" for c in COLUMNS)
            out.append(f"| {r['keyword']} | {key} | {r['learn_outcomes'].get('learned', 0)} | {fa[0]:.3f} ({fa[1]:.3f}) "
                       f"| {ref[0]:.3f} ({ref[1]:.3f}) | {miss} | {r['guests'][key]['takes+learned']:.2f} % |")
    return "\n".join(out)


@cli.command
def main(argv=None):
    from hotphrase import household_eval as HE
    from hotphrase.constants import STEP_SECONDS
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("--tables", nargs="+", metavar="REPORT.json", help="only print BENCHMARKS.md's tables of these")
    ap.add_argument("--bank")
    ap.add_argument("--speakers", help="cluster_speakers' output, one keyword")
    ap.add_argument("--keywords", default=os.environ.get("HOTPHRASE_REAL_KEYWORDS",
                                                         os.path.join(HE.SHARED, "real-keywords")))
    ap.add_argument("--clips-dir", help="the clean renderings (household_conditions --clean)")
    ap.add_argument("--learn-in", nargs="+", metavar="NAME=DIR",
                    help="the learn half's clips rendered in these conditions in turn (household_conditions --house)")
    ap.add_argument("--condition", action="append", default=[], metavar="NAME=DIR",
                    help="the test half also scored in these renderings (the --learn-in ones always are)")
    ap.add_argument("--test-npz", nargs="+", help="household_eval's test side (false accepts)")
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--z", type=float, default=None,
                    help="the running z threshold (the wake and the learning), default the bank's (sensitivity 0.5); "
                         "false accepts are still held at the takes' at the bank's z")
    ap.add_argument("--learn-through", choices=("all", "takes"), default="all",
                    help="which templates cut the learned span from a wake's frames: all (the speaker's rule when "
                         "session 7 measured it) or the takes alone (Household.learn's since, chosen by it)")
    ap.add_argument("--wait", type=int, default=0, metavar="STEPS",
                    help="a wake waits for its peak at most STEPS frames before its frames are kept (first_wake): 0, "
                         "the rule session 7 measured, or the speaker's since session 8, "
                         f"{H.PEAK_WAIT_STEPS} (FusedDetector.peakWaitSteps)")
    ap.add_argument("--frontend", default="none", metavar=FR.metavar(),
                    help="the front end ahead of the embedding (frontend_registry.parse_frontend), as household_eval's: the takes "
                         "are embedded through it, and every rendering and the test side must have been made through "
                         "it (household_conditions --frontend)")
    ap.add_argument("--enrol-variants", default=None, metavar="SPEC",
                    help="multi-condition enrollment (household_eval's --enrol-variants grammar, one variant, e.g. "
                         "noise10+room10): each take's renderings enrolled beside it, as takes; needs "
                         "--enrol-noise-sentences")
    ap.add_argument("--enrol-noise-sentences", default=None, metavar="NPZ",
                    help="training sentences for the renderings' babble (WORKDIR/cache/sent_train*.npz)")
    ap.add_argument("--back-to", nargs="+", type=float, default=[], metavar="FA_PER_HOUR",
                    help="also the lowest z at which takes + learned are back at these false accepts an hour (mean "
                         "over enrollments; e.g. another report's clean takes at the bank's z), and the misses there")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    if a.tables:
        reports = []
        for p in a.tables:
            with open(p) as f:
                reports.append(json.load(f))
        print(tables(reports))
        return
    for need in ("bank", "speakers", "clips_dir", "learn_in", "test_npz"):
        if not getattr(a, need):
            raise HotPhraseError("--" + need.replace("_", "-"), "needed (except with --tables)")

    def named(specs, what):
        out = {}
        for c in specs:
            name, sep, folder = c.partition("=")
            if not sep or not name or not folder:
                raise HotPhraseError(c, f"{what} wants NAME=DIR")
            out[name] = folder
        return out
    renderings = HE.parse_variant(a.enrol_variants) if a.enrol_variants else []
    if renderings and not a.enrol_noise_sentences:
        raise HotPhraseError("--enrol-variants", "needs --enrol-noise-sentences (the renderings' babble)")
    frontend = FR.parse_frontend(a.frontend)
    learn_dirs = named(a.learn_in, "--learn-in")
    cond_dirs = dict(learn_dirs)
    cond_dirs.update(named(a.condition, "--condition"))
    header, _, mean, bank_segments = H.read_bank(a.bank)
    z_bank = float(header["z_threshold"])
    z_th = z_bank if a.z is None else a.z
    word, labels = HE.one_keyword(a.speakers)
    names = sorted(labels)
    col = {n: j for j, n in enumerate(names)}
    emb = HE.Embedder(FR.make(frontend))
    scorers = HE.Scorers(mean, bank_segments)
    measure = lambda cuts: scorers.dtw_stats([H.centre(c, mean) for c in cuts])  # noqa: E731
    meta, households = [], []
    for takes, m in HE.draw_enrollments(labels, os.path.join(a.keywords, word), a.seed, a.draws, emb):
        learn, test = split_own(m["own"])
        meta.append({"speaker": m["speaker"], "draw": m["draw"], "takes": m["takes"], "learn": learn, "test": test,
                     "guests": m["guests"], "take_audio": m["take_audio"], "take_spans": m["take_spans"]})
        households.append([np.asarray(t, np.float32) for t in takes])
    if renderings:
        extra, drawn = rendered_takes(meta, renderings, HE.enrol_banks(a.enrol_noise_sentences), emb)
        households = [h + x for h, x in zip(households, extra)]
        print(f"{a.enrol_variants}: {np.mean([len(h) for h in households]):g} templates an enrollment; renderings "
              f"{dict(drawn)}", flush=True)
    stats = measure([t for h in households for t in h])
    it = iter(stats)
    households = [[template(t, mean, *next(it), learned=False) for t in h] for h in households]
    clean = HE.load_clips_npz(os.path.join(a.clips_dir, f"e1_eval_real_{word}.npz"), labels, frontend)
    conds = {c: HE.load_clips_npz(os.path.join(d, f"e1_eval_real_{word}.npz"), labels, frontend)
             for c, d in cond_dirs.items()}
    cond_labels = {c: HE.load_labels(os.path.join(d, f"e1_eval_real_{word}.npz"), labels)
                   for c, d in cond_dirs.items()}
    order = list(learn_dirs)
    learn_clips = [[conds[alternate(j, order)][n] for j, n in enumerate(m["learn"])] for m in meta]
    print(f"{word}: {len(meta)} enrollments, learn clips {sum(map(len, learn_clips))}, "
          f"test clips {sum(len(m['test']) for m in meta)}", flush=True)
    learned, outcomes, lengths = learn_half(households, learn_clips, mean, z_th, measure,
                                            through_takes=a.learn_through == "takes", wait=a.wait)
    counts = collections.Counter(o for oc in outcomes for o in oc)
    by_cond = collections.defaultdict(collections.Counter)
    for m, oc in zip(meta, outcomes):
        for j, o in enumerate(oc):
            by_cond[alternate(j, order)][o] += 1
    n_learned = [sum(t["learned"] for t in h) for h in learned]
    print(f"learn half: {dict(counts)}; learned templates kept per enrollment: "
          f"{dict(sorted(collections.Counter(n_learned).items()))}; path frames: "
          f"{ {w: dict(sorted(c.items())) for w, c in lengths.items()} }", flush=True)

    # false accepts on the test side
    streams = HE.load_streams(a.test_npz, frontend)
    hours = sum(len(x) for x in streams) * STEP_SECONDS / 3600
    zt, zl = stream_series(learned, streams, mean, HE.REFRACTORY_STEPS)
    both = np.maximum(zt, zl)
    fa_t = fa_per_hour(zt, z_th, hours, HE.count_wakes)
    fa_b = fa_per_hour(both, z_th, hours, HE.count_wakes)
    fa_ref = fa_per_hour(zt, z_bank, hours, HE.count_wakes)
    z_back, fa_back = z_returning(float(fa_ref.mean()), both, hours, HE.count_wakes, z_th)
    back_to = {f"{x:g}": z_returning(x, both, hours, HE.count_wakes, z_th) for x in a.back_to}
    z_top = max([z_back or z_th] + [z for z, _ in back_to.values() if z is not None])
    sweep = {}
    for z in Z_SWEEP[(Z_SWEEP >= z_th - 1e-9) & (Z_SWEEP <= z_top + 1e-9)]:
        ft, fb = fa_per_hour(zt, z, hours, HE.count_wakes), fa_per_hour(both, z, hours, HE.count_wakes)
        sweep[f"{z:.1f}"] = {"takes": [round(float(ft.mean()), 3), round(float(ft.max()), 3)],
                             "takes+learned": [round(float(fb.mean()), 3), round(float(fb.max()), 3)]}
    del zt, zl, both
    print(f"false accepts an hour ({hours:.3f} h): takes {fa_t.mean():.3f} (worst {fa_t.max():.3f}), takes+learned "
          f"{fa_b.mean():.3f} (worst {fa_b.max():.3f}); back to the takes' at z {z_back}"
          + "".join(f"; back to {k} at z {z}" for k, (z, _) in back_to.items()), flush=True)

    # misses of the test half, guests
    def best_over(clip_map):
        t, l_ = zip(*(best_split(learned, clip_map[n], mean) for n in names))
        return np.stack(t, axis=1), np.stack(l_, axis=1)
    test_rows = [(e, [col[n] for n in m["test"]]) for e, m in enumerate(meta)]
    guest_rows = [(e, [col[n] for n in m["guests"]]) for e, m in enumerate(meta)]
    zs = [z_th] + ([z_back] if z_back is not None and z_back != z_th else [])
    zs += sorted({z for z, _ in back_to.values() if z is not None} - set(zs))
    rep = {"keyword": word, "bank": os.path.basename(a.bank), "frontend": frontend or "none",
           "z_threshold": z_th, "z_bank": z_bank, "enrol_variants": a.enrol_variants or "clean",
           "templates_per_enrollment_before_learning": float(np.mean([len(h) for h in households])),
           "fa_per_hour_takes_at_bank_z": [round(float(fa_ref.mean()), 3), round(float(fa_ref.max()), 3)],
           "enrollments": len(meta),
           "learn_in": order, "learn_through": a.learn_through, "wait": a.wait, "learn_clips": sum(map(len, learn_clips)),
           "test_clips": sum(len(m["test"]) for m in meta), "learn_outcomes": dict(counts),
           "learn_outcomes_by_condition": {c: dict(v) for c, v in by_cond.items()},
           "learned_kept_per_enrollment": dict(sorted(collections.Counter(n_learned).items())),
           "path_frames": {w: dict(sorted(c.items())) for w, c in lengths.items()},
           "take_frames": dict(sorted(collections.Counter(len(t["raw"]) for h in households for t in h).items())),
           "learned_kept_frames": dict(sorted(collections.Counter(len(t["raw"]) for h in learned for t in h
                                                                  if t["learned"]).items())),
           "test_side_hours": round(hours, 3),
           "fa_per_hour": {"takes": [round(float(fa_t.mean()), 3), round(float(fa_t.max()), 3)],
                           "takes+learned": [round(float(fa_b.mean()), 3), round(float(fa_b.max()), 3)]},
           "z_back": z_back, "fa_per_hour_at_z_back": None if fa_back is None else round(fa_back, 3),
           "back_to": {k: {"z": z, "fa_per_hour": None if f is None else round(f, 3)} for k, (z, f) in back_to.items()},
           "fa_sweep": sweep, "misses": {}, "guests": {}, "misses_by_rendering": {}}
    for c, clip_map in [("clean", clean)] + list(conds.items()):
        bt, bl = best_over(clip_map)
        bb = np.maximum(bt, bl)
        rep["misses"][c] = {f"{z:.1f}": {"takes": pooled(bt, test_rows, z)[0], "takes+learned": pooled(bb, test_rows, z)[0],
                                         "clips": pooled(bt, test_rows, z)[1]} for z in zs}
        if c == "clean":
            rep["guests"] = {f"{z:.1f}": {"takes": round(100 - pooled(bt, guest_rows, z)[0], 2),
                                          "takes+learned": round(100 - pooled(bb, guest_rows, z)[0], 2),
                                          "clips": pooled(bt, guest_rows, z)[1]} for z in zs}
        if cond_labels.get(c) is not None:
            rep["misses_by_rendering"][c] = {"takes": by_label(bt, test_rows, z_th, cond_labels[c], names),
                                             "takes+learned": by_label(bb, test_rows, z_th, cond_labels[c], names)}
        print(c, json.dumps(rep["misses"][c]), flush=True)
    print("guests", json.dumps(rep["guests"]), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
