"""Fixtures for the Swift speech-embedding detector's tests (Tests/HotPhraseTests/Fixtures/embedding).

  python -m hotphrase.make_embedding_fixtures OUT_DIR [--models DIR]

Writes, from short espeak-ng clips (synthetic, made here, no data set):
- test.hpm: the exported speech_embedding backbone (float16) with a small random head (its scores mean nothing;
  they only have to match),
- CLIP.flac: the clips, 16 kHz mono 16-bit,
- reference.json: per clip, the TFLite graphs' own mel frames and embeddings (openWakeWord's framing: 1760
  samples every 1280 for the mel graph, 76 frames every 8 for the embedding graph), the numpy reference's
  embeddings with the file's float16 weights, and the head's scores on those.

Needs the exporter's venv (pyopen-wakeword, ai-edge-litert, numpy) and espeak-ng and sox on the PATH.
"""
import json
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

from . import cli
from . import export_embedding as E
from .constants import EMB_DIM, EMB_STEP, EMB_WINDOW, INT16_MAX, INT16_SCALE, MEL_CALL_SAMPLES, MEL_GROUP, MEL_HOP
from .constants import NUM_MELS, SAMPLE_RATE

# (name, espeak-ng voice, text, leading silence in seconds, noise level as a fraction of full scale)
CLIPS = [
    ("ok-hound-silence", "en-us+m3", "OK Hound, what time is it?", 0.6, 0.0),
    ("hounddog-noise", "en-gb-x-rp+f2", "The old hound dog found a greyhound.", 0.4, 0.003),
]


def speak(voice, text, lead, noise, seed):
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "a.wav")
        out = os.path.join(tmp, "b.wav")
        subprocess.run(["espeak-ng", "-v", voice, "-w", raw, text], check=True)
        # -D: no dither, so that the clips are the same on every run
        subprocess.run(["sox", "-D", raw, "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", out], check=True)
        with wave.open(out) as w:
            x = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float64) / INT16_SCALE
    x = np.concatenate([np.zeros(int(lead * SAMPLE_RATE)), x, np.zeros(int(0.3 * SAMPLE_RATE))])
    x = x / np.max(np.abs(x)) * 0.5
    x += noise * np.random.default_rng(seed).standard_normal(len(x))
    return np.clip(np.round(x * INT16_MAX), -INT16_MAX - 1, INT16_MAX).astype(np.int16)


def tflite_reference(models, samples):
    """The TFLite graphs over a clip as openWakeWord frames them (from the clip's first sample)."""
    from ai_edge_litert.interpreter import Interpreter
    mi = Interpreter(model_path=os.path.join(models, "melspectrogram.tflite"))
    mi.resize_tensor_input(0, [1, MEL_CALL_SAMPLES])
    mi.allocate_tensors()
    x = samples.astype(np.float32)
    mels = []
    for s in range(0, len(x) - MEL_CALL_SAMPLES + 1, MEL_GROUP * MEL_HOP):
        mi.set_tensor(mi.get_input_details()[0]["index"], x[None, s:s + MEL_CALL_SAMPLES])
        mi.invoke()
        mels.append(mi.get_tensor(mi.get_output_details()[0]["index"]).reshape(-1, NUM_MELS) / 10 + 2)
    mels = np.concatenate(mels)
    ei = Interpreter(model_path=os.path.join(models, "embedding_model.tflite"))
    ei.resize_tensor_input(0, [1, EMB_WINDOW, NUM_MELS, 1])
    ei.allocate_tensors()
    embs = []
    for s in range(0, len(mels) - EMB_WINDOW + 1, EMB_STEP):
        ei.set_tensor(ei.get_input_details()[0]["index"], mels[None, s:s + EMB_WINDOW, :, None])
        ei.invoke()
        embs.append(ei.get_tensor(ei.get_output_details()[0]["index"]).reshape(EMB_DIM))
    return mels.astype(np.float32), np.asarray(embs, np.float32)


def rounded(a, digits):
    return [[round(float(v), digits) for v in row] for row in a]


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("out")
    ap.add_argument("--models", default=None)
    a = ap.parse_args(argv)
    models = a.models or E.default_models_dir()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        E.random_head(tmp, frames=16, hidden=32, seed=15, phrase="test")
        meta, head = E.read_head(tmp)
    model = os.path.join(a.out, "test.hpm")
    E.export(E.read_mel(os.path.join(models, "melspectrogram.tflite")),
             E.read_embedding(os.path.join(models, "embedding_model.tflite")), meta, head, model, "float16")
    header, ts = E.load(model)
    ref = {"model": "test.hpm", "clips": []}
    for i, (name, voice, text, lead, noise) in enumerate(CLIPS):
        x = speak(voice, text, lead, noise, i)
        wav = os.path.join(a.out, name + ".wav")
        with wave.open(wav, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(SAMPLE_RATE)
            w.writeframes(x.tobytes())
        subprocess.run(["sox", wav, wav[:-4] + ".flac"], check=True)
        os.remove(wav)
        mels, embs = tflite_reference(models, x)
        ours = E.mel_frames(header, ts, x)
        exported = E.embed(header, ts, ours)
        scores = E.head_scores(header, ts, exported)
        print(f"{name}: {len(x) / SAMPLE_RATE:.2f} s, {len(mels)} mel frames (numpy vs TFLite "
              f"{np.abs(ours[:len(mels)] - mels[:len(ours)]).max():.2e}), {len(embs)} embeddings (float16 vs TFLite "
              f"{np.abs(exported - embs[:len(exported)]).max():.3f} of max {np.abs(embs).max():.1f}), "
              f"{len(scores)} scores {scores.min():.3f}..{scores.max():.3f}")
        ref["clips"].append({"file": name + ".flac", "mel": rounded(mels, 5), "embeddings": rounded(embs, 4),
                             "embeddings_exported": rounded(exported, 4),
                             "scores": [round(float(s), 6) for s in scores]})
    with open(os.path.join(a.out, "reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))


if __name__ == "__main__":
    sys.exit(main())
