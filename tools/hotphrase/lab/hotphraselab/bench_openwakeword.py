"""CPU of openWakeWord's own feature pipeline (pyopen-wakeword 1.1.0: melspectrogram.tflite + embedding_model.tflite
through the wheel's TFLite C library) on the same audio as `hound-speaker-bench hotphrase`, for BENCHMARKS.md.

  python -m hotphraselab.bench_openwakeword [MINUTES] [WAV] [--head HEAD_DIR] [--pocketsphinx]

The audio is WAV (default share/demo/ok-hound-what-time-is-it.wav) repeated to MINUTES, fed in 1280-sample
chunks as openWakeWord's examples feed it. The wheel's wake-word heads are CC BY-NC-SA and are not run: with
--head, a head of the project's contract (head.json + head.npz) is run in numpy on each step's last embeddings
instead (its cost is a few hundred thousand multiply-adds, small beside the embedding's). With --pocketsphinx,
PocketSphinx's keyphrase spotting ("okay hound", PyPI pocketsphinx and its US English model, in 100 ms chunks as
`hotphrase.evaluate` runs it) then goes over the same audio in the same process. Prints process CPU seconds and
the share of one core for each.
"""
import os
import sys
import time
import wave

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))  # the repository
from hotphrase import cli
from hotphrase import export_embedding as E
from hotphrase.constants import EMB_DIM, SAMPLE_RATE, STEP_SAMPLES
from hotphrase.errors import HotPhraseError


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("minutes", nargs="?", type=float, default=10)
    ap.add_argument("wav", nargs="?", default=os.path.join(ROOT, "share/demo/ok-hound-what-time-is-it.wav"))
    ap.add_argument("--head")
    ap.add_argument("--pocketsphinx", action="store_true")
    a = ap.parse_args(argv)
    from pyopen_wakeword.openwakeword import OpenWakeWordFeatures
    with wave.open(a.wav) as w:
        if not (w.getframerate() == SAMPLE_RATE and w.getnchannels() == 1 and w.getsampwidth() == 2):
            raise HotPhraseError(a.wav, "need 16 kHz mono 16-bit")
        source = np.frombuffer(w.readframes(w.getnframes()), np.int16)
    total = int(a.minutes * 60 * SAMPLE_RATE)
    audio = np.resize(source, total)
    head = E.read_head(a.head) if a.head else None
    features = OpenWakeWordFeatures.from_builtin()
    features.reset()
    history = np.zeros((16 if head is None else head[0]["frames"], EMB_DIM), np.float32)
    steps = 0
    t0 = time.process_time()
    for start in range(0, total - STEP_SAMPLES + 1, STEP_SAMPLES):
        for emb in features.process_streaming(audio[start:start + STEP_SAMPLES].tobytes()):
            steps += 1
            if head is not None:
                history = np.roll(history, -1, axis=0)
                history[-1] = emb.reshape(EMB_DIM)
                x = history.reshape(-1)
                for layer in head[1]:
                    t = layer["type"]
                    if t == "dense":
                        x = x @ layer["w"] + layer["b"]
                    elif t == "layernorm":
                        x = (x - x.mean()) / np.sqrt(x.var() + layer["eps"]) * layer["gamma"] + layer["beta"]
                    elif t == "relu":
                        x = np.maximum(x, 0)
                    else:
                        x = 1 / (1 + np.exp(-x))
    cpu = time.process_time() - t0
    seconds = total / SAMPLE_RATE
    print(f"openWakeWord pipeline (TFLite mel + embedding{' + numpy head' if head else ''}): {seconds:.0f} s of audio, "
          f"{steps} embeddings, {cpu:.3f} s CPU: {100 * cpu / seconds:.3f} % of one core")
    if a.pocketsphinx:
        from hotphrase.evaluate_format1 import POCKETSPHINX_THRESHOLDS, pocketsphinx_spot
        kws = POCKETSPHINX_THRESHOLDS[0]  # its CPU hardly depends on the threshold (BENCHMARKS.md, issue #5)
        times, cpu = pocketsphinx_spot(audio, "okay hound", kws)
        print(f"PocketSphinx keyphrase spotting (kws_threshold {kws:g}): {seconds:.0f} s of audio, {len(times)} "
              f"detections, {cpu:.3f} s CPU: {100 * cpu / seconds:.3f} % of one core")


if __name__ == "__main__":
    sys.exit(main())
