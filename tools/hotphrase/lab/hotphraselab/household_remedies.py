"""The personal path's two remedies for the goals household_eval's first runs left unmet (issue #37, part 2,
session 4; BENCHMARKS.md, "Issue #37, part 2, session 4: multi-condition enrollment and a gated personal path"),
measured on household_eval's draws, clips and sides; neither shipped.

  python -m hotphraselab.household_remedies [household_eval's options] --generic HEAD_DIR ... --bank-z
         --enrol-noise-sentences WORKDIR/cache/sent_train_piper.npz
         [--enrol-variants SPEC ...] [--gate-floors F[@Z] ...] [--gate-ahead STEPS]

- Multi-condition enrollment (`--enrol-variants SPEC ...`): every take also rendered in training-side noise and
  procedural rooms (household_eval.render_take; never the evaluation's noise families or rooms), each rendering
  one more template normalised against the bank.
- The gate (`--gate-floors F ...`): a template wake of the model's phrase counts only when the generic score's max
  over the last GATE_STEPS steps reaches a floor.
Reported per variant, head and floor, instead of household_eval's scorers and fused tables: misses and guests clean
and in each --condition, false accepts on the test side and on the threshold side (added to the generic's), the
floor the threshold side would choose, and the z that keeps a variant's false accepts at the clean enrollment's.
(Until the lab was split off, these were household_eval's own options.)
"""
import collections
import json
import os
import sys

import numpy as np

from hotphrase import cli
from hotphrase import household as H
from hotphrase import household_eval as HE
from hotphrase.errors import HotPhraseError

GATE_STEPS = 12  # the gate looks at the generic score's max over the last 12 steps (0.96 s), this one included
GATE_AHEAD = [0]  # ... and this many after it (--gate-ahead; a list so the command line can set it)
Z_GRID = np.round(np.arange(5.9, 9.05, 0.1), 1)


def causal_max(g, steps, ahead=0):
    """max(g[t - steps + 1 .. t + ahead]) at every t (fewer at either end). With ahead > 0 a template wake at t is
    decided `ahead` steps late (the generic score may peak after the template's best match)."""
    g = np.asarray(g)
    out = g.copy()
    for k in range(1, min(steps, len(g))):
        out[k:] = np.maximum(out[k:], g[:-k])
    for k in range(1, min(ahead + 1, len(g))):
        out[:-k] = np.maximum(out[:-k], g[k:])
    return out


def parse_gate(spec):
    """A gate: "F" (the generic score's recent max must reach F) or "F@Z" (the same, except that a template wake
    with z at least Z passes anyway) -> (F, Z or None)."""
    f, at, z = str(spec).partition("@")
    try:
        floor, bypass = float(f), (float(z) if at else None)
    except ValueError:
        raise HotPhraseError(spec, "a gate is F or F@Z: a generic score floor in (0, 1), optionally @ a z")
    if not 0 < floor < 1:
        raise HotPhraseError(spec, f"the floor {floor:g} is not a generic score in (0, 1)")
    return floor, bypass


def gate_name(gate):
    return "none" if gate is None else f"{gate[0]:g}" + (f"@{gate[1]:g}" if gate[1] is not None else "")


def gate_pass(g_recent, z, gate):
    """Where a template wake may count: the generic score's recent max (causal_max) reaches the gate's floor, or z
    reaches its bypass; gate None: everywhere."""
    if gate is None:
        return np.ones(np.shape(z), bool)
    ok = np.asarray(g_recent) >= gate[0]
    if gate[1] is not None:
        ok = ok | (np.asarray(z) >= gate[1])
    return ok


def gated_fires(z_row, z_th, g_row, g_th, gate, steps=GATE_STEPS):
    """The fused decision with a gate on the personal path (the model's own phrase): a step wakes when the generic
    score reaches its threshold, or the personal z reaches its own where gate_pass allows it (the generic score's
    max over the last `steps` steps reaches the floor, or z the bypass); gate None: no gate (fused_fires), a number:
    a floor alone. As 1.0 / 0.0 for count_wakes."""
    if gate is not None and not isinstance(gate, tuple):
        gate = (float(gate), None)
    p = (np.asarray(z_row) >= z_th) & gate_pass(causal_max(g_row, steps, GATE_AHEAD[0]), z_row, gate)
    return (p | (np.asarray(g_row) >= g_th)).astype(np.float32)


def z_needed(fa_by_z, target, grid=Z_GRID):
    """The lowest z of the grid at which the false accepts (an hour, [len(grid)]) are at most `target`, or None."""
    ok = [float(z) for z, fa in zip(grid, fa_by_z) if fa <= target + 1e-9]
    return min(ok) if ok else None


def chosen_floor(added_by_floor, floors):
    """The lowest gate floor (None, no gate, counts as the lowest) at which the templates add no false accepts on
    the side it is chosen on (fused minus generic, summed over enrollments, at most 0), or "not found"."""
    for f, added in zip(floors, added_by_floor):
        if added <= 0:
            return f
    return "not found"


class Remedies:
    """Every enrollment variant's templates at once: [V, E] lists of template indices into one set of centred
    templates with their bank mu/sd, so that each stream or clip runs one DTW pass for all of them."""

    def __init__(self, scorers, variants, enrollments_takes, raw_takes, take_audio, spans, embedder, banks):
        self.scorers, self.variants = scorers, variants
        raws, index, self.drawn = [], {}, collections.Counter()

        def tid(key):
            if key not in index:
                take, rendering = key
                if rendering is None:
                    raws.append(raw_takes[take])
                else:
                    x, drawn = HE.render_take(take_audio[take], rendering, take, banks)
                    self.drawn.update(drawn)
                    raws.append(H.span_frames(None, None, x, spans[take], take, embedder)[0])
                index[key] = len(raws) - 1
            return index[key]
        self.ids = [[[tid((t, None)) for t in takes] + [tid((t, r)) for t in takes for r in renderings]
                     for takes in enrollments_takes] for _, renderings in variants]
        self.T = [H.centre(e, scorers.mean) for e in raws]
        st = np.array(scorers.dtw_stats(self.T))
        self.mu, self.sd = st[:, 0], np.maximum(st[:, 1], H.SD_FLOOR)

    def templates_per_enrollment(self, v):
        return float(np.mean([len(x) for x in self.ids[v]]))

    def z(self, raw):
        """[V, E, n] personal z (max over each enrollment's templates; -inf before a path exists)."""
        s = H.dtw_scores(self.T, H.centre(np.asarray(raw, np.float32), self.scorers.mean))
        z = (self.mu[:, None] - s) / self.sd[:, None]
        z = np.where(np.isfinite(z), z, -np.inf)
        return np.stack([np.stack([z[i].max(axis=0) for i in per_e]) for per_e in self.ids])


def remedies_clips(rem, clip_list, heads, z_th, floors):
    """Over clips: (pbest [C, V, E] best personal z, gbest [C, H] best generic score, gated [C, H, F, V, E] heard
    by the gated personal path at z_th (floor None: pbest >= z_th))."""
    C, V, E, Hn, F = len(clip_list), len(rem.variants), len(rem.ids[0]), len(heads), len(floors)
    pbest = np.full((C, V, E), -np.inf, np.float32)
    gbest = np.full((C, Hn), -np.inf, np.float32)
    gated = np.zeros((C, Hn, F, V, E), bool)
    for c, raw in enumerate(clip_list):
        if not len(raw):
            continue
        Z = rem.z(raw)
        pbest[c] = Z.max(axis=-1)
        P = Z >= z_th
        for h, (_, head, arrays, _) in enumerate(heads):
            g = HE.generic_series(head, arrays, raw)
            gbest[c, h] = g.max()
            gm = causal_max(g, GATE_STEPS, GATE_AHEAD[0])
            for fi, f in enumerate(floors):
                gated[c, h, fi] = (P & gate_pass(gm, Z, f)).any(axis=-1)
    return pbest, gbest, gated


def remedies_false_accepts(rem, streams, heads, z_th, floors, grid=Z_GRID):
    """Wakes on streams: personal [V, E, len(grid)] at each z of the grid, generic [H], fused [H, F, V, E] at z_th
    with each gate floor."""
    V, E, Hn, F = len(rem.variants), len(rem.ids[0]), len(heads), len(floors)
    pers = np.zeros((V, E, len(grid)))
    gen = np.zeros(Hn)
    fused = np.zeros((Hn, F, V, E))
    for raw in streams:
        raw = np.asarray(raw, np.float32)
        if not len(raw):
            continue
        Z = rem.z(raw)
        for v in range(V):
            for e in range(E):
                row = Z[v, e]
                if (row >= grid[0]).any():
                    pers[v, e] += [HE.count_wakes(row, z) for z in grid]
        P = Z >= z_th
        for h, (_, head, arrays, g_th) in enumerate(heads):
            g = HE.generic_series(head, arrays, raw)
            n_gen = HE.count_wakes(g, g_th)
            gen[h] += n_gen
            gm = causal_max(g, GATE_STEPS, GATE_AHEAD[0])
            for fi, f in enumerate(floors):
                p = P & gate_pass(gm, Z, f)
                fused[h, fi] += n_gen
                for v, e in zip(*np.nonzero(p.any(axis=-1))):
                    fused[h, fi, v, e] += HE.count_wakes((p[v, e] | (g >= g_th)).astype(np.float32), 0.5) - n_gen
    return pers, gen, fused


def pooled(heard, own, guests):
    """heard [C, E] bool; own, guests [E, C] masks -> (own missed %, guests heard %), pooled over enrollments."""
    h = np.asarray(heard).T
    return (round(100 * float((own & ~h).sum()) / max(int(own.sum()), 1), 2),
            round(100 * float((guests & h).sum()) / max(int(guests.sum()), 1), 2))


def remedies_report(meta, rem, clip_names, clip_sets, heads, z_th, floors, test, threshold):
    """The session-4 report: clip_sets {condition: [raw embeddings per clip_names]}, test and threshold (streams,
    seconds). Per variant: templates, personal misses / guests per condition at z_th, its false accepts on both
    sides, the z that keeps its test-side (and threshold-side) false accepts at the clean variant's, the misses
    there; per variant, head and gate floor: the fused detector's misses, guests and false accepts (and those
    added to the generic's), the gated personal path's misses, and the floor chosen on the threshold side."""
    col = {n: j for j, n in enumerate(clip_names)}
    E = len(meta)
    own = np.zeros((E, len(clip_names)), bool)
    guests = np.zeros((E, len(clip_names)), bool)
    for e, m in enumerate(meta):
        own[e, [col[n] for n in m["own"]]] = True
        guests[e, [col[n] for n in m["guests"]]] = True
    import time
    t0 = time.time()
    clips, fa = {}, {}
    for c, cl in clip_sets.items():
        clips[c] = remedies_clips(rem, cl, heads, z_th, floors)
        print(f"clips {c}: {len(cl)} ({time.time() - t0:.0f} s)", flush=True)
    for side, s in (("test", test), ("threshold", threshold)):
        fa[side] = remedies_false_accepts(rem, s[0], heads, z_th, floors)
        print(f"false accepts, {side} side: {s[1] / 3600:.2f} h ({time.time() - t0:.0f} s)", flush=True)
    hours = {"test": test[1] / 3600, "threshold": threshold[1] / 3600}
    zi = int(np.flatnonzero(np.isclose(Z_GRID, z_th))[0])
    fstr = [gate_name(f) for f in floors]
    rep = {"z_threshold": z_th, "gate_steps": GATE_STEPS, "gate_ahead": GATE_AHEAD[0], "floors": fstr, "enrollments": E,
           "hours": {k: round(v, 3) for k, v in hours.items()}, "renderings_drawn": dict(rem.drawn),
           "generic": {}, "variants": {}}
    for h, (name, _, _, g_th) in enumerate(heads):
        rep["generic"][name] = {"threshold": g_th, **{f"fa_per_hour_{s}": round(fa[s][1][h] / hours[s], 3)
                                                     for s in hours},
                                **{c: dict(zip(("missed", "guests"), pooled(np.repeat((gb[:, h] >= g_th)[:, None], E,
                                                                                      axis=1), own, guests)))
                                   for c, (_, gb, _) in clips.items()}}
    base = {s: fa[s][0][0, :, zi].mean() / hours[s] for s in hours}  # the clean variant's, at z_th
    for v, (vname, _) in enumerate(rem.variants):
        pfa = {s: fa[s][0][v] / hours[s] for s in hours}  # [E, grid]
        r = {"templates_per_enrollment": rem.templates_per_enrollment(v), "personal": {}, "z_needed": {},
             "heads": {}}
        r["personal"]["fa_per_hour_test_mean"] = round(float(pfa["test"][:, zi].mean()), 3)
        r["personal"]["fa_per_hour_test_worst"] = round(float(pfa["test"][:, zi].max()), 3)
        r["personal"]["fa_per_hour_threshold_mean"] = round(float(pfa["threshold"][:, zi].mean()), 3)
        for c, (pb, _, _) in clips.items():
            r["personal"][c] = dict(zip(("missed", "guests"), pooled(pb[:, v] >= z_th, own, guests)))
        for s in hours:
            z = z_needed(pfa[s].mean(axis=0), base[s])
            entry = {"z": z, "clean_variant_fa_per_hour": round(float(base[s]), 3)}
            if z is not None:
                gi = int(np.flatnonzero(np.isclose(Z_GRID, z))[0])
                entry["fa_per_hour_test_mean"] = round(float(pfa["test"][:, gi].mean()), 3)
                entry["personal"] = {c: dict(zip(("missed", "guests"), pooled(pb[:, v] >= z, own, guests)))
                                     for c, (pb, _, _) in clips.items()}
                entry["fused"] = {name: {c: dict(zip(("missed", "guests"), pooled(
                    (pb[:, v] >= z) | (gb[:, h] >= g_th)[:, None], own, guests))) for c, (pb, gb, _) in clips.items()}
                    for h, (name, _, _, g_th) in enumerate(heads)}
            r["z_needed"][f"on_{s}_side"] = entry
        for h, (name, _, _, g_th) in enumerate(heads):
            hr = {}
            for fi, f in enumerate(fstr):
                e = {}
                for s in hours:
                    fz = fa[s][2][h, fi, v] / hours[s]
                    added = (fa[s][2][h, fi, v] - fa[s][1][h]) / hours[s]
                    e[f"fused_fa_per_hour_{s}_mean"] = round(float(fz.mean()), 3)
                    e[f"fused_fa_per_hour_{s}_worst"] = round(float(fz.max()), 3)
                    e[f"added_fa_per_hour_{s}_mean"] = round(float(added.mean()), 3)
                    e[f"added_fa_per_hour_{s}_worst"] = round(float(added.max()), 3)
                    e[f"added_wakes_{s}"] = int(round(float((fa[s][2][h, fi, v] - fa[s][1][h]).sum())))
                for c, (_, gb, gt) in clips.items():
                    e[c] = {"fused": dict(zip(("missed", "guests"), pooled(gt[:, h, fi, v] | (gb[:, h] >= g_th)[:, None],
                                                                           own, guests))),
                            "personal_gated": dict(zip(("missed", "guests"), pooled(gt[:, h, fi, v], own, guests)))}
                hr[str(f)] = e
            hr["floor_chosen_on_threshold_side"] = chosen_floor(
                [hr[str(f)]["added_wakes_threshold"] for f in fstr], fstr)
            r["heads"][name] = hr
        rep["variants"][vname] = r
        print(f"variant {vname}", json.dumps(r), flush=True)
    return rep


def remedies_run(a, spk, drawn, scorers, emb, heads, plan, variants, gates, header, neg, frontend):
    """The session-4 report (remedies_report) of one keyword's draws, the keys that say what was measured added."""
    word = sorted(spk)[0]
    if len(spk) != 1:
        raise HotPhraseError(a.speakers, f"--enrol-variants and --gate-floors need one keyword, not {sorted(spk)}")
    rem = Remedies(scorers, variants, [m["takes"] for m in drawn.meta],
                   {n: t for n, t in drawn.takes.items() if t is not None}, drawn.take_audio, drawn.spans, emb,
                   HE.enrol_banks(a.enrol_noise_sentences))
    print(f"enrollments: {len(drawn.meta)}; templates: {len(rem.T)}; renderings: {dict(rem.drawn)}", flush=True)
    names = HE.limited(a, spk[word])
    clip_sets = {"clean": [drawn.clip_embs[(word, n)] for n in names]}
    for c, d in plan.conditions.items():
        cm = HE.load_clips_npz(os.path.join(d, f"e1_eval_real_{word}.npz"), spk[word], frontend)
        clip_sets[c] = [cm[n] for n in names]
    rr = remedies_report(drawn.meta, rem, names, clip_sets, heads, float(header["z_threshold"]),
                         [None] + gates, (neg.test_streams, neg.test_sec), (neg.thr_streams, neg.thr_sec))
    rr.update({"keyword": word, "speakers_enrolled": len({m["speaker"] for m in drawn.meta}),
               "takes_rejected": dict(drawn.rejected), "variants_spec": {v: r for v, r in variants}})
    return rr


class Lab:
    """What household_eval.run asks of the remedies: their options checked where household_eval checked them, and
    the report made in place of its own."""

    def __init__(self):
        self.gates = self.variants = None

    def check_options(self, a):
        if not (a.generic and a.bank_z and a.enrol_noise_sentences):
            raise HotPhraseError("--enrol-variants/--gate-floors", "need --generic, --bank-z and "
                                                                   "--enrol-noise-sentences")
        if a.no_threshold_side:
            raise HotPhraseError("--no-threshold-side", "the remedies choose gate floors on the threshold side")
        if a.condition_test_side:
            raise HotPhraseError("--condition-test-side", "not measured with --enrol-variants/--gate-floors")
        if a.candidates_out:
            raise HotPhraseError("--candidates-out", "not with the remedies")
        if a.z_sweep:
            raise HotPhraseError("--z-sweep", "not with the remedies")
        self.gates = [parse_gate(g) for g in a.gate_floors]
        if a.gate_ahead < 0:
            raise HotPhraseError("--gate-ahead", f"{a.gate_ahead} steps: at least 0")
        GATE_AHEAD[0] = a.gate_ahead
        self.variants = [("clean", [])] + [(v, HE.parse_variant(v)) for v in (a.enrol_variants or []) if v != "clean"]

    def report(self, a, spk, drawn, scorers, emb, heads, plan, header, neg, frontend):
        return remedies_run(a, spk, drawn, scorers, emb, heads, plan, self.variants, self.gates, header, neg,
                            frontend)


@cli.command
def main(argv=None):
    ap = HE.parser(__name__, __doc__)
    ap.add_argument("--enrol-variants", nargs="+", default=None, metavar="SPEC",
                    help="multi-condition enrollment; each SPEC a set of renderings of every take kept as extra "
                         "templates (clean, or e.g. noise10, noise10x2, room, room10, noise10+room10; "
                         "household_eval.parse_variant); clean is always measured first")
    ap.add_argument("--enrol-noise-sentences", default=None, metavar="NPZ",
                    help="training sentences for the renderings' babble (WORKDIR/cache/sent_train_piper.npz)")
    ap.add_argument("--gate-floors", nargs="*", default=[], metavar="F[@Z]",
                    help="gate the personal path of the model's phrase on the generic score's max over "
                         f"the last {GATE_STEPS} steps reaching F (each F measured, beside no gate); F@Z: a "
                         "template wake with z >= Z passes anyway")
    ap.add_argument("--gate-ahead", type=int, default=0, metavar="STEPS",
                    help="the gate also looks this many steps after the template's (its wake that much later)")
    a = ap.parse_args(argv)
    if a.enrol_variants is None and not a.gate_floors:
        raise HotPhraseError("--enrol-variants/--gate-floors", "give one (without them: python -m "
                                                               "hotphrase.household_eval)")
    HE.run(a, Lab())


if __name__ == "__main__":
    sys.exit(main())
