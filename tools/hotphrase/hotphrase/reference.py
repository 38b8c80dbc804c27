"""The reference inference over audio files, for checking the Swift detector and making its tests' fixtures.

  python -m hotphrase.reference MODEL OUT.json WAV... [--threshold X]                  (format 1, the default)
  python -m hotphrase.reference --format 2 HEAD_DIR OUT.npz FILE... [--threshold X] [--lead S]

Format 1 (a model file): for each WAV (16 kHz mono 16-bit), every smoothed score the detector produces (one per
30 ms step once its history is full) and the detections at the threshold (default: the model's), with their times
in seconds, which is what `hound-speaker hotphrase` prints.

Format 2 (recipe e1's head folder, hotphrase/embedding.py: reference): for each 16 kHz mono file (WAV or FLAC; with
--lead S, after S seconds of zeros), keys FILE_INDEX/mel (frames x 32, after mel / 10 + 2), /embeddings (steps x
96), /probabilities and /scores (one per 80 ms step from step frames-1 on), /detections (indices into scores at the
threshold, default the head's, with its refractory period). Mel frame t comes from the mel model call on samples
[1280 (t // 8), 1280 (t // 8) + 1760); embedding j from mel frames [8 j, 8 j + 76).
"""
import json
import os
import sys

import numpy as np
from scipy.io import wavfile

from . import cli
from . import frontend, model
from .constants import SAMPLE_RATE, STEP_SAMPLES
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


def write_reference_e1(head_dir, out_path, files, threshold=None, lead=0.0):
    """Writes OUT.npz for the audio files (see the module doc); threshold None: the head's."""
    # format 2's modules only here: format 1 needs neither
    from . import dataset as D
    from . import embedding as E
    head, _ = E.load_head(head_dir)
    thr = threshold if threshold is not None else head["threshold"]
    refr = int(round(head["refractory_seconds"] * SAMPLE_RATE / STEP_SAMPLES))
    fe = E.Frontend()
    out = {}
    for i, f in enumerate(files):
        x = np.concatenate([np.zeros(int(lead * SAMPLE_RATE), np.float32), D.read_audio(f)])
        r = E.reference(x, head_dir, fe)
        for k, v in r.items():
            out[f"{i}/{k}"] = v
        out[f"{i}/detections"] = np.array(E.detections(r["scores"], thr, refr), np.int64)
        print(f"{f}: {len(r['embeddings'])} embeddings, max score {r['scores'].max() if len(r['scores']) else 0:.4f}, "
              f"{len(out[f'{i}/detections'])} detections at {thr}")
    np.savez(out_path, files=np.array(files), threshold=thr, **out)


class Format1:
    DEFAULTS = {}

    @staticmethod
    def add_arguments(g):
        pass

    @staticmethod
    def run(a):
        write_reference(a.model, a.out, a.files, a.threshold)


class Format2:
    DEFAULTS = {}

    @staticmethod
    def add_arguments(g):
        g.add_argument("--lead", type=float, default=0.0,
                       help="seconds of digital silence before each file (a clip shorter than the head's window, "
                            "about 2 s, gives no score on its own)")

    @staticmethod
    def run(a):
        write_reference_e1(a.model, a.out, a.files, a.threshold, a.lead)


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("model", help="format 1: the model file; format 2: the head's folder (head.json, head.npz)")
    ap.add_argument("out", help="format 1: OUT.json; format 2: OUT.npz")
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("--threshold", type=float)
    a, mod = cli.parse_formats(ap, {1: Format1, 2: Format2}, argv)
    mod.run(a)


if __name__ == "__main__":
    sys.exit(main())
