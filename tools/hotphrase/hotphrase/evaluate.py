"""Step 3: the honest evaluation of a detector, format 1 (recipe v9's model file) or format 2 (recipe e1's head),
on held-out voices, held-out noise families and real recordings.

  python -m hotphrase.evaluate PHRASE WORKDIR [--format 1] [--model FILE] [--swift-bin hound-speaker]
                               [--pocketsphinx] [--negative-hours 5] [--limit N] [--set-threshold]
  python -m hotphrase.evaluate PHRASE WORKDIR --format 2 [--head DIR ...] [--out FILE] [--no-synthetic]
                               [--limit 600] [--set-threshold] [--extra-eval DIR ...]

What each reports: hotphrase/evaluate_format1.py and evaluate_format2.py (both draw the held-out audio of
hotphrase/heldout.py). --set-threshold writes the 0.1 false-accepts-per-hour point into the model file (format 1)
or head.json (format 2) as its default. An option of the other format is an error.
"""
import sys

from . import cli, evaluate_format1, evaluate_format2
from .phrases import PHRASES

FORMATS = {1: evaluate_format1, 2: evaluate_format2}


def parse(argv=None):
    """(the arguments, the module of their format), each option at its format's default."""
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("phrase", choices=sorted(PHRASES))
    ap.add_argument("workdir")
    ap.add_argument("--limit", type=int, help="format 1: only this many clips of each kind (a quick check of the "
                                              "script); format 2: held-out synthetic positives per SNR (default 600)")
    ap.add_argument("--set-threshold", action="store_true",
                    help="write the 0.1 false-accepts-per-hour threshold into the model file (format 1) or head.json "
                         "(format 2) as its default")
    return cli.parse_formats(ap, FORMATS, argv)


@cli.command
def main(argv=None):
    a, mod = parse(argv)
    mod.run(a)


if __name__ == "__main__":
    sys.exit(main())
