"""A neural speech enhancer ahead of the hot-phrase embedding (issue #37, part 2, session 9b): GTCRN (Rong et al.,
ICASSP 2024, MIT licence), its streaming ONNX export run frame by frame through onnxruntime. A measurement tool,
never part of the speaker; the model file is not in the repository and is named on the command line
(`--frontend gtcrn:PATH`, frontends.py).

  Enhancer(path)(int16 samples at 16 kHz) -> int16 samples, the same length
  python -m hotphraselab.gtcrn MODEL.onnx IN.wav [--reference REF.wav] [--out OUT.wav]
      its real-time factor on this host (one thread: CPU seconds per second of audio) and, given the model's own
      enhanced REF.wav of IN.wav, the residual between them as a fraction of REF's power

The model's interface, as its streaming export defines it: one STFT frame at a time, 512-point FFT of 512 samples
under a square-root Hann window (periodic), hop 256 (16 ms), input `mix` (1, 257, 1, 2) = the frame's real and
imaginary parts, output `enh` the same shape (the enhanced frame's spectrum), and three recurrent/convolution
caches (`conv_cache`, `tra_cache`, `inter_cache`, zeros at a stream's start) that each call returns updated as
`*_out`. Synthesis is the same window and overlap-add: the squared window sums to one at hop 256, so with the
model's output replaced by its input the samples come back as they went in (tests/test_gtcrn.py).

As the speaker would run it: one fresh set of caches per stream (a take, a clip, a test-side stream), its frames
in order from the start, 256 zeros ahead of the first sample (the streaming analysis has nothing before it) and
zeros after the last to complete the frames. The device would hear each sample 512 samples (32 ms) late; here the
output is cut back into line with the input, so that the evaluation's spans and lengths are unchanged.
"""
import hashlib
import os
import time

import numpy as np

from hotphrase import cli
from hotphrase.errors import HotPhraseError

NFFT = 512
HOP = 256
SAMPLE_RATE = 16000
CACHES = ("conv_cache", "tra_cache", "inter_cache")

# the periodic Hann window's square root (the export's analysis and synthesis window)
WINDOW = np.sqrt(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(NFFT) / NFFT))


def n_frames(n):
    """Frames covering n samples after HOP leading zeros, every sample under two frames."""
    return -(-n // HOP) + 1


def analyse(x):
    """(T, 257) complex64 spectra of float samples x, as the model takes them (T = n_frames(len(x)))."""
    n = len(x)
    t = n_frames(n)
    padded = np.zeros(HOP * (t + 1), np.float32)
    padded[HOP:HOP + n] = x
    idx = np.arange(t)[:, None] * HOP + np.arange(NFFT)[None, :]
    return np.fft.rfft(padded[idx] * WINDOW, axis=1).astype(np.complex64)


def synthesise(spec, n):
    """n float samples from (T, 257) spectra, by the inverse of analyse (windowed overlap-add, cut into line)."""
    t = len(spec)
    frames = np.fft.irfft(spec, NFFT, axis=1) * WINDOW
    out = np.zeros(HOP * (t + 1), np.float64)
    for k in range(t):  # hop is half the frame: two overlapping frames per sample
        out[k * HOP:k * HOP + NFFT] += frames[k]
    return out[HOP:HOP + n].astype(np.float32)


def load_session(path, threads=1):
    """An onnxruntime session over the model at `path` (one thread unless told), checked for the interface above."""
    if not os.path.isfile(path):
        raise HotPhraseError(path, "no GTCRN model file there (the streaming export, e.g. stream/onnx_models/"
                                   "gtcrn_simple.onnx of github.com/Xiaobin-Rong/gtcrn)")
    try:
        import onnxruntime as ort
    except ImportError:
        raise HotPhraseError("onnxruntime", "not installed in this Python (pip install onnxruntime into the "
                                            "measurement venv)") from None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    ins = {i.name: i.shape for i in sess.get_inputs()}
    outs = [o.name for o in sess.get_outputs()]
    want = ("mix",) + CACHES
    if sorted(ins) != sorted(want) or list(ins["mix"]) != [1, NFFT // 2 + 1, 1, 2]:
        raise HotPhraseError(path, f"not GTCRN's streaming export: inputs {ins}, want mix (1, 257, 1, 2) and "
                                   f"{', '.join(CACHES)}")
    if outs[0] != "enh" or any(f"{c}_out" not in outs for c in CACHES):
        raise HotPhraseError(path, f"not GTCRN's streaming export: outputs {outs}")
    return sess


def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Enhancer:
    """GTCRN over one stream per call, from fresh (zero) caches, its frames in order."""

    def __init__(self, path, threads=1):
        self.path = path
        self.sess = load_session(path, threads)
        shapes = {i.name: i.shape for i in self.sess.get_inputs()}
        self.cache_shapes = {c: tuple(shapes[c]) for c in CACHES}
        self.out_names = ["enh"] + [f"{c}_out" for c in CACHES]

    def spectra(self, spec):
        """The model's output spectra for (T, 257) input spectra, one frame at a time with the caches carried."""
        caches = {c: np.zeros(s, np.float32) for c, s in self.cache_shapes.items()}
        mix = np.stack([spec.real, spec.imag], axis=-1).astype(np.float32)  # (T, 257, 2)
        out = np.empty_like(mix)
        run = self.sess.run
        names = self.out_names
        for k in range(len(mix)):
            enh, *new = run(names, {"mix": mix[k][None, :, None, :], **caches})
            out[k] = enh[0, :, 0, :]
            caches = dict(zip(CACHES, new))
        return out[..., 0] + 1j * out[..., 1]

    def enhance_float(self, x):
        x = np.asarray(x, np.float32)
        if len(x) == 0:
            return x.copy()
        return synthesise(self.spectra(analyse(x)), len(x))

    def __call__(self, samples):
        x = np.asarray(samples)
        if x.dtype != np.int16:
            raise HotPhraseError(f"samples of {x.dtype}", "the front end takes int16 samples")
        y = self.enhance_float(x.astype(np.float32) / 32768.0)
        return np.clip(np.round(y.astype(np.float64) * 32768), -32768, 32767).astype(np.int16)


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("model")
    ap.add_argument("wav", help="16 kHz mono")
    ap.add_argument("--reference", help="the model's own enhancement of WAV, to compare with")
    ap.add_argument("--out", help="write the enhanced WAV here")
    ap.add_argument("--repeat", type=int, default=3, help="runs timed (the fastest is reported)")
    a = ap.parse_args(argv)
    import soundfile as sf
    x, sr = sf.read(a.wav, dtype="float32")
    if sr != SAMPLE_RATE or x.ndim != 1:
        raise HotPhraseError(a.wav, f"want 16 kHz mono, got {sr} Hz, shape {x.shape}")
    enh = Enhancer(a.model, threads=1)
    best = None
    for _ in range(max(1, a.repeat)):
        t0 = time.process_time()
        y = enh.enhance_float(x)
        cpu = time.process_time() - t0
        best = cpu if best is None else min(best, cpu)
    secs = len(x) / SAMPLE_RATE
    frames = n_frames(len(x))
    print(f"{a.wav}: {secs:.2f} s, {frames} frames; one thread: {best:.3f} CPU s, real-time factor "
          f"{best / secs:.4f}, {1e3 * best / frames:.3f} ms a frame (a frame is {1e3 * HOP / SAMPLE_RATE:.0f} ms)")
    if a.reference:
        r, _ = sf.read(a.reference, dtype="float32")
        m = min(len(r), len(y))
        ref = np.mean(r[:m] ** 2)
        res = np.mean((y[:m] - r[:m]) ** 2) / ref
        inp = np.mean((x[:m] - r[:m]) ** 2) / ref
        print(f"against {a.reference}: residual power / reference power {res:.2e}; the input's {inp:.3f}")
    if a.out:
        sf.write(a.out, y, SAMPLE_RATE)


if __name__ == "__main__":
    raise SystemExit(main())
