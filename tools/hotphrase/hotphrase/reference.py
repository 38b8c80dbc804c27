"""The reference inference over WAV files, for the Swift detector's tests.

  python -m hotphrase.reference MODEL OUT.json WAV... [--threshold X]

For each file (16 kHz mono 16-bit): every smoothed score the detector produces (one per 30 ms step once its
history is full) and the detections at the threshold (default: the model's), with their times in seconds, which
is what `hound-speaker hotphrase` prints.
"""
import json
import os
import sys

import numpy as np
from scipy.io import wavfile

from . import cli
from . import frontend, model
from .constants import SAMPLE_RATE
from .errors import HotPhraseError


def write_reference(model_path, out_path, wavs, threshold=None):
    """Writes OUT.json for the WAV files (see the module doc); threshold None: the model's default."""
    header, ts = model.load(model_path)
    thr = threshold if threshold is not None else header["default_threshold"]
    refr = int(round(header["refractory_seconds"] / (header["stack"] * header["hop"] / header["sample_rate"])))
    out = {"model": os.path.basename(model_path), "threshold": thr, "clips": []}
    for w in wavs:
        sr, x = wavfile.read(w)
        if not (sr == SAMPLE_RATE and x.dtype == np.int16 and x.ndim == 1):
            raise HotPhraseError(w, "need 16 kHz mono 16-bit")
        f = frontend.features(frontend.to_float(x))
        s = model.smooth(model.probabilities(header, ts, f), header["smoothing"])
        first = model.RECEPTIVE_STEPS - 1
        dets = []
        for i in model.detections(s, thr, refr):
            step = first + i
            end = (step * header["stack"] + header["stack"] - 1) * header["hop"] + header["window"]
            dets.append({"time": round(end / SAMPLE_RATE, 3), "score": round(float(s[i]), 4)})
        out["clips"].append({"file": os.path.basename(w), "scores": [round(float(v), 5) for v in s],
                             "detections": dets})
        print(f"{os.path.basename(w)}: {len(s)} scores, max {s.max() if len(s) else 0:.3f}, detections {dets}")
    with open(out_path, "w") as out_file:
        json.dump(out, out_file, indent=1)


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("wavs", nargs="+")
    ap.add_argument("--threshold", type=float)
    a = ap.parse_args(argv)
    write_reference(a.model, a.out, a.wavs, a.threshold)


if __name__ == "__main__":
    sys.exit(main())
