"""Recipe e1's reference inference over audio files, for checking the Swift detector (hotphrase/embedding.py:
reference).

  python -m hotphrase.reference_e1 HEAD_DIR OUT.npz FILE... [--threshold X]

For each 16 kHz mono file (WAV or FLAC; with --lead S, after S seconds of zeros), keys FILE_INDEX/mel (frames x 32, after mel / 10 + 2), /embeddings
(steps x 96), /probabilities and /scores (one per 80 ms step from step frames-1 on), /detections (indices into
scores at the threshold, default the head's, with its refractory period). Mel frame t comes from the mel model
call on samples [1280 (t // 8), 1280 (t // 8) + 1760); embedding j from mel frames [8 j, 8 j + 76).
"""
import sys

import numpy as np

from . import cli
from . import dataset as D
from . import embedding as E
from .constants import SAMPLE_RATE as SR
from .constants import STEP_SAMPLES


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("head_dir")
    ap.add_argument("out")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--threshold", type=float)
    ap.add_argument("--lead", type=float, default=0.0,
                    help="seconds of digital silence before each file (a clip shorter than the head's window, about "
                         "2 s, gives no score on its own)")
    a = ap.parse_args(argv)
    head, _ = E.load_head(a.head_dir)
    thr = a.threshold if a.threshold is not None else head["threshold"]
    refr = int(round(head["refractory_seconds"] * SR / STEP_SAMPLES))
    fe = E.Frontend()
    out = {}
    for i, f in enumerate(a.files):
        x = np.concatenate([np.zeros(int(a.lead * SR), np.float32), D.read_audio(f)])
        r = E.reference(x, a.head_dir, fe)
        for k, v in r.items():
            out[f"{i}/{k}"] = v
        out[f"{i}/detections"] = np.array(E.detections(r["scores"], thr, refr), np.int64)
        print(f"{f}: {len(r['embeddings'])} embeddings, max score {r['scores'].max() if len(r['scores']) else 0:.4f}, "
              f"{len(out[f'{i}/detections'])} detections at {thr}")
    np.savez(a.out, files=np.array(a.files), threshold=thr, **out)


if __name__ == "__main__":
    sys.exit(main())
