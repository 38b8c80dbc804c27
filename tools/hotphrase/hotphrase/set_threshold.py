"""Sets a trained head's default threshold (head.json "threshold", which export_embedding writes into the model
file as its default sensitivity) to one of the points its evaluation measured, without scoring anything again.

  python -m hotphrase.set_threshold HEAD_DIR [--fa-per-hour {0.1,0.5}]

Reads HEAD_DIR/eval.json (`hotphrase.evaluate --format 2 --head HEAD_DIR`): its negatives' "threshold_at_X_fa_per_hour".
`evaluate --format 2 --set-threshold` writes the 0.1 FA/h point while it evaluates; the ship rule (ship_rule.py)
measures the keywords' misses at 0.5 FA/h, so the model that ships is set to that point (BENCHMARKS.md, "seed 3 ships
at the 0.5 FA/h point").
"""
import json
import os

from . import cli
from .errors import HotPhraseError

POINTS = ("0.1", "0.5")


def set_threshold(head_dir, fa_per_hour="0.5"):
    """Writes the evaluation's threshold at fa_per_hour into head.json and returns it."""
    if fa_per_hour not in POINTS:
        raise HotPhraseError(head_dir, f"no threshold is measured at {fa_per_hour} false accepts an hour "
                                       f"(only {', '.join(POINTS)})")
    report_path = os.path.join(head_dir, "eval.json")
    head_path = os.path.join(head_dir, "head.json")
    with open(report_path) as f:
        report = json.load(f)
    try:
        thr = float(report["negatives"][f"threshold_at_{fa_per_hour}_fa_per_hour"])
    except (KeyError, TypeError, ValueError) as e:
        raise HotPhraseError(report_path,
                             f"not a format-2 evaluation report with a {fa_per_hour} FA/h threshold ({e})") from e
    if not 0.0 <= thr <= 1.0:
        raise HotPhraseError(report_path, f"threshold {thr} is outside 0...1")
    with open(head_path) as f:
        head = json.load(f)
    head["threshold"] = thr
    tmp = head_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(head, f, indent=1)
    os.replace(tmp, head_path)
    return thr


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("head_dir")
    ap.add_argument("--fa-per-hour", default="0.5", choices=POINTS)
    a = ap.parse_args(argv)
    thr = set_threshold(a.head_dir, a.fa_per_hour)
    print(f"{a.head_dir}/head.json: threshold {thr} (the {a.fa_per_hour} FA/h point of eval.json)", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
