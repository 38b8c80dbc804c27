"""The network, its model file (.hpm) and the reference inference the Swift detector must match.

Network (causal, so streaming inference is exact): 10 ms log-mel frames are stacked in threes (one step every
30 ms, 120 values), normalised per mel channel, a pointwise layer to C channels, then residual blocks of
depthwise temporal convolution (kernel 5, dilations 1, 2, 4, 8, 1) + pointwise layer, each with ReLU, and a
logistic output on the newest step. The receptive field is 65 steps (1.95 s), enough for a slow "okay hound".

Model file: b"HPM1", a little-endian u32 header length, a JSON header (front-end numbers, layer list, tensor
table, threshold and evaluation facts), then the tensors: weights int8 with one float32 scale per output
channel, biases and normalisation float32. The reference inference below runs on the dequantised weights, as the
Swift detector does, so the numbers measured here are those of the shipped file.
"""

import numpy as np

from . import frontend, hpmfile
from .constants import SMOOTHING, STACK

KERNEL = 5
DILATIONS = [1, 2, 4, 8, 1]
RECEPTIVE_STEPS = 1 + sum((KERNEL - 1) * d for d in DILATIONS)  # 65
WINDOW_FRAMES = RECEPTIVE_STEPS * STACK  # 195
LOGIT_CLIP = 80.0  # exp overflows beyond; the logistic is exactly 0 or 1 there in float32 anyway


def build_keras(channels, mean, std):
    import keras
    from keras import layers
    inp = keras.Input((WINDOW_FRAMES, frontend.NMEL))
    x = layers.Lambda(lambda t: (t - mean) / std, name="norm")(inp)
    x = layers.Reshape((RECEPTIVE_STEPS, STACK * frontend.NMEL))(x)
    x = layers.Conv1D(channels, 1, activation="relu", name="in")(x)
    for i, d in enumerate(DILATIONS):
        y = layers.DepthwiseConv1D(KERNEL, dilation_rate=d, activation="relu", name=f"dw{i}")(x)
        y = layers.Conv1D(channels, 1, activation="relu", name=f"pw{i}")(y)
        x = layers.Add()([x[:, (KERNEL - 1) * d:, :], y])
    x = layers.Lambda(lambda t: t[:, -1, :])(x)
    out = layers.Dense(1, activation="sigmoid", name="out")(x)
    return keras.Model(inp, out)


def _q(w, axis_out):
    """Symmetric int8 with one scale per output channel (axis_out of w)."""
    w = np.moveaxis(w, axis_out, -1)
    scale = np.maximum(np.abs(w).reshape(-1, w.shape[-1]).max(axis=0), 1e-8) / 127.0
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def keras_weights(m):
    """The keras network's float weights in the model file's layout (what write() stores and probabilities()
    reads): in.weight [C][120], dwI.weight [C][K], pwI.weight [C][C] and out.weight [1][C], each out-major, and
    the biases."""
    ts = {}
    w, b = m.get_layer("in").get_weights()  # (1, 120, C)
    ts["in.weight"], ts["in.bias"] = w[0].T, b
    for i in range(len(DILATIONS)):
        w, b = m.get_layer(f"dw{i}").get_weights()  # (K, C, 1)
        ts[f"dw{i}.weight"], ts[f"dw{i}.bias"] = w[:, :, 0].T, b
        w, b = m.get_layer(f"pw{i}").get_weights()  # (1, C, C)
        ts[f"pw{i}.weight"], ts[f"pw{i}.bias"] = w[0].T, b
    w, b = m.get_layer("out").get_weights()  # (C, 1)
    ts["out.weight"], ts["out.bias"] = w.T, b
    return ts


def export(model, mean, std, path, meta):
    """Writes the keras network as a .hpm file (see write)."""
    write(keras_weights(model), mean, std, path, meta)


def write(weights, mean, std, path, meta):
    """Writes the .hpm file from keras_weights()' dict: the normalisation (mean, 1 / std) and biases float32, the
    weights int8 with a float32 scale per output row (Sources/HotPhrase/ModelFile.swift reads this layout).
    `meta` (phrase, default_threshold, refractory_seconds, training, ...) is merged into the header."""
    tensors = []

    def add_f32(name, a):
        tensors.append((name, "float32", np.asarray(a, np.float32).ravel(), None, list(np.shape(a))))

    def add_q(name, w_out_major):
        q, s = _q(w_out_major, 0)  # rows are output channels
        tensors.append((name, "int8", np.moveaxis(q, -1, 0).ravel(), s, list(w_out_major.shape)))

    add_f32("norm.mean", mean)
    add_f32("norm.inv_std", 1.0 / std)
    add_q("in.weight", weights["in.weight"])
    add_f32("in.bias", weights["in.bias"])
    for i in range(len(DILATIONS)):
        add_q(f"dw{i}.weight", weights[f"dw{i}.weight"])
        add_f32(f"dw{i}.bias", weights[f"dw{i}.bias"])
        add_q(f"pw{i}.weight", weights[f"pw{i}.weight"])
        add_f32(f"pw{i}.bias", weights[f"pw{i}.bias"])
    add_q("out.weight", weights["out.weight"])
    add_f32("out.bias", weights["out.bias"])

    table, blobs, off = [], [], 0
    for name, dtype, data, scale, shape in tensors:
        raw = data.astype("<f4" if dtype == "float32" else "i1").tobytes()
        entry = {"name": name, "dtype": dtype, "shape": shape, "offset": off, "bytes": len(raw)}
        blobs.append(raw)
        off += len(raw)
        if scale is not None:
            sraw = scale.astype("<f4").tobytes()
            entry["scale_offset"] = off
            blobs.append(sraw)
            off += len(sraw)
        table.append(entry)
    channels = int(np.shape(weights["in.bias"])[0])
    header = {
        "format": 1, "sample_rate": frontend.SAMPLE_RATE, "window": frontend.WINDOW, "hop": frontend.HOP,
        "fft": frontend.NFFT, "mels": frontend.NMEL, "fmin": frontend.FMIN, "fmax": frontend.FMAX,
        "log_floor": frontend.LOG_FLOOR, "stack": STACK, "channels": channels, "kernel": KERNEL,
        "dilations": DILATIONS, "smoothing": SMOOTHING, "tensors": table, **meta,
    }
    hpmfile.write(path, header, b"".join(blobs))


def load(path):
    """Reads a .hpm file into (header, dict of dequantised float32 arrays)."""
    return hpmfile.read(path)


def relu(x):
    return np.maximum(x, 0.0)


def probabilities(header, ts, feats):
    """Network output for every 30 ms step of a whole feature sequence (frames, 40), vectorised. Step k is frames
    3k..3k+2; the first RECEPTIVE_STEPS-1 steps have no output (the detector is still filling its history), so
    the result has len = steps - 64 and element i belongs to step i + 64."""
    stack, k, dil = header["stack"], header["kernel"], header["dilations"]
    steps = len(feats) // stack
    x = (feats[: steps * stack] - ts["norm.mean"]) * ts["norm.inv_std"]
    x = x.reshape(steps, stack * feats.shape[1])
    x = relu(x @ ts["in.weight"].T + ts["in.bias"])
    for i, d in enumerate(dil):
        w = ts[f"dw{i}.weight"]  # (C, K)
        span = (k - 1) * d
        n = len(x) - span
        if n <= 0:
            return np.zeros(0, np.float32)
        y = sum(x[j * d: j * d + n] * w[:, j] for j in range(k)) + ts[f"dw{i}.bias"]
        y = relu(relu(y) @ ts[f"pw{i}.weight"].T + ts[f"pw{i}.bias"])
        x = x[span:] + y
    z = x @ ts["out.weight"][0] + ts["out.bias"][0]
    z = np.clip(z, -LOGIT_CLIP, LOGIT_CLIP)
    return (1.0 / (1.0 + np.exp(-z))).astype(np.float32)


def smooth(p, n=SMOOTHING):
    """Mean of the last n probabilities (fewer at the start), as the detector smooths."""
    c = np.cumsum(np.concatenate([[0.0], p]))
    idx = np.arange(1, len(p) + 1)
    lo = np.maximum(0, idx - n)
    return ((c[idx] - c[lo]) / (idx - lo)).astype(np.float32)


def detections(scores, threshold, refractory_steps):
    """Step indices where the detector fires: score >= threshold, then deaf for refractory_steps."""
    out, nxt = [], 0
    for i in np.nonzero(scores >= threshold)[0]:
        if i >= nxt:
            out.append(int(i))
            nxt = i + refractory_steps
    return out


update_header = hpmfile.update_header
