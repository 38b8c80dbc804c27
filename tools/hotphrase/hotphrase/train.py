"""Step 2: train a detector, format 1 (recipe v9, the network of hotphrase/model.py, written as one model file) or
format 2 (recipe e1, a head over Google's speech_embedding, written as head.json + head.npz for export_embedding).

  python -m hotphrase.train PHRASE WORKDIR [--format 1] [--channels 96] [--steps 10000] [--seed 1] [--no-l2]
                            [--out WORKDIR/PHRASE/model.hpm]
  python -m hotphrase.train PHRASE WORKDIR --format 2 [--frames 16] [--hidden 128] [--steps 3000] [--seed 1]
                            [--out DIR] [--extra-negatives DIR ... [--extra-copies 2]]
                            [--slow-share 0.3 [--slow-tempo 0.6 0.85]] [--features-only]

Both need `python -m hotphrase.make_data PHRASE WORKDIR` first and use only training voices, training noise
families and training speakers. What each trains on and how: hotphrase/train_format1.py and train_format2.py;
the shared noise shares and training loop: hotphrase/training.py. An option of the other format is an error.
"""
import os
import sys

from . import cli, train_format1, train_format2
from .phrases import PHRASES

FORMATS = {1: train_format1, 2: train_format2}


def parse(argv=None):
    """(the arguments, the module of their format), each option at its format's default."""
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("phrase", choices=sorted(PHRASES))
    ap.add_argument("workdir")
    ap.add_argument("--steps", type=int, help="training steps (format 1: 10000, format 2: 3000)")
    ap.add_argument("--batch", type=int, help="batch size (format 1: 256, format 2: 512)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the whole run (default 1)")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", help="format 1: the model file (default WORKDIR/PHRASE/model.hpm); "
                                  "format 2: the head's folder (default WORKDIR/PHRASE/e1)")
    a, mod = cli.parse_formats(ap, FORMATS, argv)
    if a.format == 1:
        train_format1.check_seed(ap, a)
    return a, mod


@cli.command
def main(argv=None):
    a, mod = parse(argv)
    mod.run(a)


if __name__ == "__main__":
    sys.exit(main())
