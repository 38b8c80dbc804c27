"""Where a model fails: held-out positives per synthesizer, clean and at 10 dB, and what fires among held-out
sentences and noises, at a threshold.

  python -m hotphraselab.diagnose MODEL THRESHOLD [WORKDIR] [--phrase ok-hound]
"""
import os
import sys
from collections import Counter, defaultdict

import numpy as np

from hotphrase import cli
from hotphrase import augment as A
from hotphrase import dataset as D
from hotphrase import frontend, model

TOOLS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/hotphrase


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("model")
    ap.add_argument("threshold", type=float)
    ap.add_argument("workdir", nargs="?", default=os.path.join(TOOLS, "work"))
    ap.add_argument("--phrase", default="ok-hound")
    ap.add_argument("--clips", type=int, default=300)
    a = ap.parse_args(argv)
    h, ts = model.load(a.model)

    def top(x):
        return float(model.smooth(model.probabilities(h, ts, frontend.features(x))).max())

    rng = np.random.default_rng(7)
    sents, meta = D.load_clips(os.path.join(a.workdir, "cache", "sent_eval.npz"))
    banks = D.Banks(rng, A.EVAL_NOISES, 120, sents[:300])
    pos, pm = D.load_clips(os.path.join(a.workdir, a.phrase, "pos_eval.npz"))
    for label, make in (("10 dB", lambda x: D.positive(rng, x, banks, sents[300:700], snr=10)[0]),
                        ("clean", lambda x: np.concatenate([np.zeros(40000, np.float32), x, np.zeros(8000, np.float32)])
                         + (1e-3 * rng.standard_normal(len(x) + 48000)).astype(np.float32))):
        by = defaultdict(list)
        for x, m in zip(pos[:a.clips], pm[:a.clips]):
            by[m.split(":")[0]].append(top(make(x)))
        for engine, v in sorted(by.items()):
            v = np.array(v)
            print(f"positives {label:6s} {engine:8s} {len(v):4d} clips: found {np.mean(v >= a.threshold) * 100:5.1f} % "
                  f"(at 0.99: {np.mean(v >= 0.99) * 100:5.1f} %)")
    fired = Counter()
    for x, m in list(zip(sents[700:], meta[700:]))[:500]:
        piece, _ = D.negative_piece(rng, np.concatenate([np.zeros(32000, np.float32), x]), banks, quiet=(0.15, (35, 50)))
        if top(piece) >= a.threshold:
            fired[m.split("|")[0].split(":")[0]] += 1
    print(f"held-out sentences in held-out noise that fire (of 500): {dict(fired) or 'none'}")
    for k in A.EVAL_NOISES:
        s = model.smooth(model.probabilities(h, ts, frontend.features(A.set_level(rng, banks.b[k], -25, -25))))
        print(f"noise {k}: {int((s >= a.threshold).sum())} steps over the threshold in 2 minutes")


if __name__ == "__main__":
    sys.exit(main())
