"""BENCHMARKS.md's tables of the household's personal path, made from household_eval's JSON reports (--json), so
that every figure in them comes from a command in the repository.

  python -m hotphrase.household_tables REPORT.json ... [--by-rendering | --z-sweep | --speaker-check [--cosines COS ...] | --head-folds
                                                   | --z-folds [--target FA]]

One row a report: the keyword, the front end, the bank's file, the z the report used, the enrolled people's other
clips missed clean and in each condition the report holds (household_eval --condition), other people's clips heard
clean, and the false accepts an hour on the test side, mean over enrollments (worst enrollment); where a report
chose its z on the threshold side, that side's false accepts an hour at it (mean over enrollments) too. With
--by-rendering, the misses in each condition broken down by what the clip went through (household_conditions
records it): noise by family, rooms by reverberation time (the distances pooled), a room in noise by the noise's
family; pooled over clips, as the report's own percentages are. With --z-sweep, the personal path at every z of a
report's household_eval --z-sweep; with --speaker-check, the lab's hotphraselab.speaker_check's
reports: today's path, and the check's threshold chosen on the threshold side at each candidate z. With --head-folds,
household_head's reports (one a keyword, run with --public): the personal head's offset picked for every phrase with
each half of the test side held out in turn, and what it gives on that half. With --z-folds, household_eval's
reports run with --z-sweep and --public (one a keyword): the bank's one z picked by its rule on the threshold side,
then with each half of the test side held out in turn and on every side, and what it gives.
"""
import json
import re

from . import cli
from .errors import HotPhraseError


def _read(path, what="JSON report"):
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise HotPhraseError(path, f"not a {what} (line {e.lineno}: {e.msg})") from None


def _load(path):
    report = _read(path, "household_eval report")
    fused = report.get("fused")
    if not isinstance(fused, dict) or "personal" not in fused:
        raise HotPhraseError(path, "not a household_eval report with a personal path (no fused.personal: "
                                   "was it run with --bank-z or the dtw scorer?)")
    return report


def keyword(report):
    words = list(report.get("scorers", {}).get("dtw", {}).get("per_word", {}))
    return ", ".join(words) if words else "?"


def frontend(report):
    """The report's front end, and the noisy conditions' own where they differ (household_conditions --oracle)."""
    fe = report.get("frontend", "none")
    other = sorted({m for m in report.get("condition_frontends", {}).values() if m != fe})
    return fe + (f" ({', '.join(other)} in {', '.join(c for c, m in report['condition_frontends'].items() if m != fe)})"
                 if other else "")


def _threshold_side(report):
    return report.get("scorers", {}).get("dtw", {}).get("threshold_side_fa_per_hour_mean")


def _pct(x):
    return f"{x:.2f} %"


def _conditions(reports, wanted=lambda report, condition: True):
    """The union of the reports' conditions (those `wanted` in some report), in first-seen order."""
    conditions = []
    for r in reports:
        for c in r["fused"].get("conditions", {}):
            if c not in conditions and wanted(r, c):
                conditions.append(c)
    return conditions


def rows(reports):
    """(header, rows) of the main table; the conditions are the union of the reports', in first-seen order."""
    conditions = _conditions(reports)
    # the threshold side's false accepts at the report's z, where a report chose z there (not --no-threshold-side)
    side = any(_threshold_side(r) is not None for r in reports)
    header = ["keyword", "front end", "bank", "z", *(["FA/h threshold side"] if side else []), "clean", *conditions,
              "guests heard (clean)", "FA/h test side"]
    out = []
    for r in reports:
        fused = r["fused"]
        personal = fused["personal"]
        cells = [keyword(r), frontend(r), r.get("bank", "?"), f"{fused['z_threshold']:.1f}"]
        if side:
            fa_side = _threshold_side(r)
            cells.append("-" if fa_side is None else f"{fa_side:.3f}")
        cells.append(_pct(personal["own_missed_pct"]))
        for c in conditions:
            got = fused.get("conditions", {}).get(c, {}).get("personal")
            cells.append(_pct(got["own_missed_pct"]) if got else "-")
        cells.append(_pct(personal["guests_heard_pct"]))
        fa, worst = personal.get("test_fa_per_hour_mean"), personal.get("test_fa_per_hour_worst_enrollment")
        cells.append("-" if fa is None else f"{fa:.3f} ({worst:.3f})")
        out.append(cells)
    return header, out


_ROOM = re.compile(r"^rt([0-9.]+)_[0-9.]+m$")
_ROOM_NOISE = re.compile(r"^rt[0-9.]+_[0-9.]+m\+(.+)$")


def group(rendering):
    """What a clip's rendering is pooled under: a room by its RT60, a room in noise by the noise's family."""
    m = _ROOM.match(rendering)
    if m:
        return f"RT60 {m.group(1)} s"
    m = _ROOM_NOISE.match(rendering)
    if m:
        return m.group(1)
    return rendering


def by_rendering(report, condition):
    """{group: (missed percent, clips)} pooled over the clips of each group, in sorted group order."""
    got = report["fused"].get("conditions", {}).get(condition, {}).get("personal", {}).get("by_rendering")
    if not got:
        return {}
    pooled = {}
    for name, v in got.items():
        missed, clips = pooled.get(group(name), (0.0, 0))
        pooled[group(name)] = (missed + v["own_missed_pct"] * v["own_clips"] / 100.0, clips + v["own_clips"])
    return {g: (100.0 * m / n if n else 0.0, n) for g, (m, n) in sorted(pooled.items())}


def rendering_rows(reports):
    conditions = _conditions(reports, lambda r, c: bool(by_rendering(r, c)))
    groups = {c: sorted({g for r in reports for g in by_rendering(r, c)}) for c in conditions}
    header = ["keyword", "front end", "bank", "z"] + [f"{c}: {' / '.join(groups[c])}" for c in conditions]
    out = []
    for r in reports:
        cells = [keyword(r), frontend(r), r.get("bank", "?"), f"{r['fused']['z_threshold']:.1f}"]
        for c in conditions:
            got = by_rendering(r, c)
            cells.append(" / ".join(f"{got[g][0]:.1f}" if g in got else "-" for g in groups[c]))
        out.append(cells)
    return header, out


def sweep_rows(reports):
    """(header, rows) of household_eval --z-sweep's table: for each report and z of its sweep the misses clean and in
    each condition, guests heard clean and the false accepts an hour on the test side (mean over enrollments (worst
    enrollment); ">=" where count_wakes could only bound them)."""
    conditions = []
    for r in reports:
        for row in r["fused"].get("z_sweep", []):
            conditions += [c for c in row["missed_pct"] if c not in conditions]
    header = ["keyword", "z", *conditions, "guests heard (clean)", "FA/h test side"]
    out = []
    for r in reports:
        for row in r["fused"].get("z_sweep", []):
            fa = f"{row['test_fa_per_hour_mean']:.3f} ({row['test_fa_per_hour_worst_enrollment']:.3f})"
            out.append([keyword(r), f"{row['z']:.1f}",
                        *(_pct(row["missed_pct"][c]) if c in row["missed_pct"] else "-" for c in conditions),
                        _pct(row["guests_heard_pct"]), (">= " if row["fa_lower_bound"] else "") + fa])
    if not out:
        raise HotPhraseError(", ".join(keyword(r) for r in reports), "no z_sweep in these reports (household_eval "
                                                                      "--z-sweep)")
    return header, out


def check_rows(reports, every=None):
    """(header, rows) of hotphraselab.speaker_check's reports: per report the plain path at the bank's z
    (no check), then for each candidate z the check's cosine threshold chosen on the threshold side and what it
    gives; with every (a list of cosines) instead every row of the report at those cosines (no check first)."""
    header = ["keyword", "window end", "candidate z", "cosine", "clean", "snr10", "room", "room-snr10",
              "guests heard (clean)", "FA/h test side", "FA/h threshold side"]
    out = []

    def window(r):
        fe = r.get("check_frontend", "none")
        return (f"match - {r.get('window_back_seconds', 0.0):g} s" + ("" if fe in (None, "none") else f", {fe}")
                + (", voice in noise too" if r.get("voice", "takes") != "takes" else ""))

    def cells(r, rep, cos):
        m = rep["missed_pct"]
        return [rep_name(r), window(r), f"{rep['z']:.1f}", cos,
                *(_pct(m[c]) if c in m else "-" for c in ("clean", "snr10", "room", "room-snr10")),
                _pct(rep["guests_heard_pct"]),
                f"{rep['test_fa_per_hour_mean']:.3f} ({rep['test_fa_per_hour_worst_enrollment']:.3f})",
                f"{rep['threshold_fa_per_hour_mean']:.3f}" if "threshold_fa_per_hour_mean" in rep else "-"]

    def rep_name(r):
        return r["keyword"]

    for r in reports:
        if "rows" not in r or "keyword" not in r:
            raise HotPhraseError(r.get("keyword", "?"), "not a hotphraselab.speaker_check report")
        if every is not None:
            for row in r["rows"]:
                if row["cos"] == -1.0 or any(abs(row["cos"] - c) < 1e-9 for c in every):
                    out.append(cells(r, row, "no check" if row["cos"] == -1.0 else f"{row['cos']:.2f}"))
            continue
        bank_z = max(r["zs"])
        plain = next(row for row in r["rows"] if row["z"] == bank_z and row["cos"] == -1.0)
        out.append(cells(r, plain, "no check (today)"))
        for ch in r.get("chosen", []):
            if ch["row"] is None:
                out.append([rep_name(r), window(r), f"{ch['z']:.1f}",
                            "none meets the target"] + ["-"] * 7)
            else:
                out.append(cells(r, ch["row"], f"{ch['cos']:.2f}"))
    return header, out


def fold_rows(reports, extra_per_hour=0.0):
    """(header, rows) of household_head's reports with test folds: the offset picked
    for every phrase with each fold of the test side held out in turn (household_head.pooled_fold_pick, the keywords'
    sides pooled), and per keyword what it gives on the fold held out; last, the pick on every side at once, read on
    the whole test side (not held out)."""
    from .household_head import pooled_fold_pick
    helds = []
    for r in reports:
        h = r.get("picked_on_the_threshold_side") or {}
        if "templates_wakes_test_folds" not in h:
            raise HotPhraseError(r.get("keyword", "?"), "not a household_head report with test folds (run it with "
                                 "--public)")
        helds.append(h)
    header = ["fold held out", "offset picked", "wakes there: pair (templates, allowed)", "keyword",
              "FA/h held out: pair",
              "templates alone", "clean", "snr10", "room", "room-snr10", "guests heard (clean)"]
    out = []
    for pick in pooled_fold_pick(helds, extra_per_hour):
        fold = "none (all sides)" if pick["fold"] is None else str(pick["fold"])
        if pick["offset"] is None:
            out.append([fold, "none", f"- ({pick['templates_wakes_there']}, {pick['wakes_allowed_there']})"]
                       + ["-"] * 8)
            continue
        for r, k in zip(reports, pick["keywords"]):
            m = k["missed_pct"]
            out.append([fold, f"{pick['offset']:.2f}",
                        f"{pick['wakes_there']} ({pick['templates_wakes_there']}, {pick['wakes_allowed_there']})",
                        r["keyword"],
                        f"{k['fa_per_hour_fold']:.3f}", f"{k['templates_fa_per_hour_fold']:.3f}",
                        *(_pct(m[c]) if c in m else "-" for c in ("clean", "snr10", "room", "room-snr10")),
                        _pct(k["guests_heard_pct"]["clean"]) if "clean" in k.get("guests_heard_pct", {}) else "-"])
    return header, out


def z_fold_rows(reports, target):
    """(header, rows) of household_eval reports run with --z-sweep and --public: the
    bank's one z picked as the shipped rule picks it on the threshold side alone, then on larger sides (each fold
    of the test side held out in turn, then every side), a row per keyword (household_eval.pooled_z_pick)."""
    from .household_eval import pooled_z_pick
    fused = []
    for r in reports:
        f = r["fused"]
        if "z_sweep_sides" not in f or not f.get("z_sweep") or "wakes_test_folds" not in f["z_sweep"][0]:
            raise HotPhraseError(keyword(r), "not a household_eval report with the z sweep's folds (run it with "
                                             "--z-sweep and --public)")
        fused.append(f)
    header = ["picked on", "hours there", "bank z (each keyword's own)", "keyword", "FA/h read on",
              "clean", "snr10", "room", "room-snr10", "guests heard (clean)"]
    names = {"threshold": "threshold side", "every": "every side"}
    out = []
    for pick in pooled_z_pick(fused, target):
        side = names.get(pick["picked_on"], f"threshold side + the other folds (fold {pick['picked_on']} held out)")
        own = ", ".join("-" if z is None else f"{z:.1f}" for z in pick["own_z"])
        if pick["z"] is None:
            out.append([side, f"{pick['hours_there']:.2f}", f"none ({own})"] + ["-"] * 7)
            continue
        for r, k in zip(reports, pick["keywords"]):
            m = k["missed_pct"]
            out.append([side, f"{pick['hours_there']:.2f}", f"{pick['z']:.1f} ({own})", keyword(r),
                        f"{k['fa_per_hour_read']:.3f} ({pick['read_on']})",
                        *(_pct(m[c]) if c in m else "-" for c in ("clean", "snr10", "room", "room-snr10")),
                        _pct(k["guests_heard_pct"])])
    return header, out


def markdown(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("reports", nargs="+", metavar="REPORT.json")
    ap.add_argument("--by-rendering", action="store_true", help="the misses in each condition by rendering")
    ap.add_argument("--z-sweep", action="store_true", help="the personal path at each z of the reports' --z-sweep")
    ap.add_argument("--speaker-check", action="store_true",
                    help="the reports are hotphraselab.speaker_check's: the thresholds chosen on the threshold side (with "
                         "--cosines: every candidate z at those cosines)")
    ap.add_argument("--cosines", nargs="+", type=float, default=None, metavar="COS")
    ap.add_argument("--head-folds", action="store_true",
                    help="the reports are hotphrase.household_head's (one a keyword): one offset for every phrase, "
                         "picked with each fold of the test side held out in turn")
    ap.add_argument("--extra-per-hour", type=float, default=0.0, metavar="FA",
                    help="with --head-folds: false accepts an hour the head may add beyond the templates' (default 0)")
    ap.add_argument("--z-folds", action="store_true",
                    help="the bank's one z picked on the threshold side, then with each fold of the test side held "
                         "out in turn, then on every side (household_eval reports run with --z-sweep and --public)")
    ap.add_argument("--target", type=float, default=0.5, metavar="FA",
                    help="with --z-folds: the false accepts an hour each keyword may have there (default 0.5)")
    args = ap.parse_args(argv)
    if args.head_folds or args.speaker_check:  # other tools' reports, read as they are
        reports = [_read(p) for p in args.reports]
        print(markdown(*(fold_rows(reports, args.extra_per_hour) if args.head_folds
                         else check_rows(reports, args.cosines))))
        return 0
    reports = [_load(p) for p in args.reports]
    if args.z_folds:
        print(markdown(*z_fold_rows(reports, args.target)))
        return 0
    if args.z_sweep:
        print(markdown(*sweep_rows(reports)))
        return 0
    print(markdown(*(rendering_rows(reports) if args.by_rendering else rows(reports))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
