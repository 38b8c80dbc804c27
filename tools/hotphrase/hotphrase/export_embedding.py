"""Google's speech_embedding front end (as openWakeWord runs it) in the project's model file, plus a classifier
head: the .hpm "format 2" that Sources/HotPhrase/EmbeddingModel.swift reads.

  python -m hotphrase.export_embedding HEAD_DIR OUT.hpm [--models DIR] [--dtype float16|float32] [--threshold T]
                                      [--ring-threshold T]

Reads the two Apache-2.0 TFLite graphs of the PyPI wheel pyopen-wakeword 1.1.0 (pyopen_wakeword/models/
melspectrogram.tflite and embedding_model.tflite; the wheel's wake-word heads are CC BY-NC-SA and are never read
here), checks that each is the graph this file understands (op by op, options included), and writes:

- mel: the STFT the mel graph computes as two convolutions (a 400-sample periodic Hann window centred in 512
  samples, cos and -sin kernels, stride 160) becomes a window + FFT size; the 257x32 filterbank; the power floor;
  10*log10; the top-dB clamp against the maximum of each graph call (8 frames: openWakeWord calls it on 1760
  samples every 1280); then openWakeWord's own `mel / 10 + 2`.
- embedding: 76 mel frames x 32 -> 96. Every convolution is VALID in time (kernel 3 or 1) and zero-padded by one
  in frequency (SAME, or the graph's explicit PAD before the first), followed by LeakyReLU(0.2) and max(x, -0.4);
  max-pools are 2x2 or 1x2 with stride = size. Time is never padded, so the network can run on a stream.
- head: head.json + head.npz from a head directory (the contract in tools/hotphrase/EMBEDDING.md).

The numpy inference below (mel_frames, embed, head_scores) is the reference the Swift code is tested against,
and it is itself checked against the TFLite interpreter by make_embedding_fixtures.py.
"""
import functools
import json
import os
import sys

import numpy as np

from . import cli
from . import hpmfile
from .errors import HotPhraseError

from .constants import DEFAULT_THRESHOLD, EMB_DIM, EMB_STEP, MEL_GROUP, MEL_OFFSET, MEL_SCALE, NUM_MELS
from .constants import REFRACTORY_SECONDS, SAMPLE_RATE, SMOOTHING
from .constants import EMB_WINDOW as EMB_FRAMES

FORMAT = 2


def default_models_dir():
    import pyopen_wakeword
    return os.path.join(os.path.dirname(pyopen_wakeword.__file__), "models")


# --- reading a TFLite graph -------------------------------------------------------------------------------------

class Graph:
    """The operators of a TFLite flatbuffer: (name, options dict, inputs, outputs) with constant tensors read."""

    def __init__(self, path):
        from ai_edge_litert import schema_py_generated as schema
        from ai_edge_litert.tools import flatbuffer_utils
        self.model = flatbuffer_utils.read_model(path)
        _expect(path, len(self.model.subgraphs) == 1, f"{len(self.model.subgraphs)} subgraphs, not one")
        self.g = self.model.subgraphs[0]
        names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
        self.ops = []
        for op in self.g.operators:
            code = self.model.operatorCodes[op.opcodeIndex]
            name = names[max(code.builtinCode, code.deprecatedBuiltinCode)]
            opts = dict(vars(op.builtinOptions)) if op.builtinOptions is not None else {}
            self.ops.append((name, opts, list(op.inputs), list(op.outputs)))

    def const(self, i):
        t = self.g.tensors[i]
        data = self.model.buffers[t.buffer].data
        if data is None or len(data) == 0:
            return None
        dtype = {0: np.float32, 2: np.int32}[t.type]
        return np.frombuffer(bytes(data), dtype).reshape(list(t.shape)).copy()

    def shape(self, i):
        return list(self.g.tensors[i].shape)


def _expect(path, cond, what):
    if not cond:
        raise HotPhraseError(path, f"not the graph this exporter knows: {what}")


def read_mel(path):
    """The mel graph's constants (see the module doc); raises HotPhraseError if the graph differs."""
    gr = Graph(path)
    expect = functools.partial(_expect, path)
    names = [o[0] for o in gr.ops]
    convs = [o for o in gr.ops if o[0] == "CONV_2D"]
    expect(len(convs) == 2 and names.count("BATCH_MATMUL") == 1 and names.count("LOG") == 1
           and names.count("REDUCE_MAX") == 1, f"ops {names}")
    kernels = []
    for _, opts, ins, _ in convs:
        expect(opts["padding"] == 1 and opts["strideH"] == 1 and opts["dilationWFactor"] == 1, "STFT conv options")
        hop = opts["strideW"]
        k = gr.const(ins[1])[:, 0, :, 0]
        bias = gr.const(ins[2])
        expect(bias is not None and not bias.any(), "STFT conv has a bias")
        kernels.append(k)
    bins, nfft = kernels[0].shape
    expect(bins == nfft // 2 + 1, "STFT kernel shape")
    n = np.arange(nfft)
    k = np.arange(bins)[:, None]
    cos, sin = np.cos(2 * np.pi * k * n / nfft), np.sin(2 * np.pi * k * n / nfft)
    re = [x for x in kernels if np.abs(x[0]).max() > 0]
    expect(len(re) == 1, "one cosine kernel")
    window = re[0][0].astype(np.float64)
    for x in kernels:
        err = min(np.abs(x - window * cos).max(), np.abs(x + window * sin).max(), np.abs(x - window * sin).max())
        expect(err < 1e-5, f"STFT kernels are not window x DFT (error {err})")
    fb = None
    consts = {}
    for name, opts, ins, outs in gr.ops:
        if name == "BATCH_MATMUL":
            fb = gr.const(ins[1])
        if name in ("MAXIMUM", "MINIMUM", "MUL", "SUB") and len(ins) == 2:
            c = gr.const(ins[1])
            if c is not None and c.size == 1:
                consts.setdefault(name, []).append(float(c))
    expect(fb is not None and fb.shape == (bins, NUM_MELS), "filterbank")
    # MINIMUM: inf (twice, no-ops); MAXIMUM: the power floor; MUL: 10 and 1/ln 10 (10 log10); SUB: top dB
    expect(all(np.isinf(v) for v in consts["MINIMUM"]), f"MINIMUM {consts['MINIMUM']}")
    expect(np.allclose(sorted(consts["MUL"]), [1 / np.log(10), 10.0], rtol=1e-6), f"MUL {consts['MUL']}")
    return {
        "fft": int(nfft), "hop": int(hop), "mels": NUM_MELS, "group": MEL_GROUP, "power_floor": consts["MAXIMUM"][0],
        "top_db": consts["SUB"][0], "scale": MEL_SCALE, "offset": MEL_OFFSET,
        "window": window.astype(np.float32), "filterbank": fb.astype(np.float32),
    }


def read_embedding(path):
    """The embedding graph as a layer list: conv {kt, kf, pad_f, weight [out, kt, kf, in], bias, alpha, floor} and
    pool {pt, pf}; raises HotPhraseError if the graph differs."""
    gr = Graph(path)
    expect = functools.partial(_expect, path)
    layers, pad_f = [], 0
    ops = gr.ops
    i = 0
    while i < len(ops):
        name, opts, ins, outs = ops[i]
        if name == "PAD":
            p = gr.const(ins[1])
            expect(p.tolist() == [[0, 0], [0, 0], [1, 1], [0, 0]], f"PAD {p.tolist()}")
            pad_f = 1
        elif name == "CONV_2D":
            expect(opts["strideW"] == 1 and opts["strideH"] == 1 and opts["dilationWFactor"] == 1
                   and opts["dilationHFactor"] == 1 and opts["fusedActivationFunction"] == 0, f"conv {opts}")
            w = gr.const(ins[1])
            b = gr.const(ins[2])
            _, kt, kf, _ = w.shape
            if opts["padding"] == 0:  # SAME: only in frequency (kt == 1), kf == 3
                expect(kt == 1 and kf == 3 and pad_f == 0, f"SAME conv {w.shape}")
                pad_f = 1
            layer = {"type": "conv", "kt": int(kt), "kf": int(kf), "pad_f": pad_f, "weight": w, "bias": b,
                     "alpha": None, "floor": None}
            pad_f = 0
            if i + 2 < len(ops) and ops[i + 1][0] == "LEAKY_RELU" and ops[i + 2][0] == "MAXIMUM":
                layer["alpha"] = float(ops[i + 1][1]["alpha"])
                layer["floor"] = float(gr.const(ops[i + 2][2][1]))
                i += 2
            layers.append(layer)
        elif name == "MAX_POOL_2D":
            pt, pf = opts["filterHeight"], opts["filterWidth"]
            expect(opts["strideH"] == pt and opts["strideW"] == pf, f"pool {opts}")
            layers.append({"type": "pool", "pt": int(pt), "pf": int(pf)})
        else:
            expect(False, f"op {name}")
        i += 1
    expect(layers[-1]["type"] == "conv" and layers[-1]["alpha"] is None, "last layer")
    expect(gr.shape(gr.g.inputs[0])[1:] == [EMB_FRAMES, NUM_MELS, 1] or gr.shape(gr.g.inputs[0])[2:] == [NUM_MELS, 1],
           "input shape")
    return layers


# --- the classifier head ----------------------------------------------------------------------------------------

def read_head(head_dir):
    """head.json + head.npz (tools/hotphrase/EMBEDDING.md, "The head contract") -> (meta, layers with arrays)."""
    where = os.path.join(head_dir, "head.json")
    with open(where) as f:
        meta = json.load(f)
    arrays = np.load(os.path.join(head_dir, "head.npz"))

    def expect(cond, what):
        if not cond:
            raise HotPhraseError(where, what)
    for key in ("phrase", "frames", "embedding_dim", "layers", "smoothing", "threshold", "refractory_seconds"):
        expect(key in meta, f"no {key}")
    expect(meta["embedding_dim"] == EMB_DIM, f"embedding_dim {meta['embedding_dim']}, not {EMB_DIM}")
    width = meta["frames"] * EMB_DIM
    layers = []
    for spec in meta["layers"]:
        t = spec["type"]
        if t == "dense":
            w = np.asarray(arrays[spec["w"]], np.float32)
            b = np.asarray(arrays[spec["b"]], np.float32)
            expect(w.shape == (width, b.shape[0]), f"dense {w.shape} (bias {b.shape}) after width {width}")
            width = w.shape[1]
            layers.append({"type": "dense", "w": w, "b": b})
        elif t == "layernorm":
            g = np.asarray(arrays[spec["gamma"]], np.float32)
            b = np.asarray(arrays[spec["beta"]], np.float32)
            expect(g.shape == b.shape == (width,), f"layernorm {g.shape}, {b.shape} after width {width}")
            layers.append({"type": "layernorm", "gamma": g, "beta": b, "eps": float(spec["eps"])})
        elif t in ("relu", "sigmoid"):
            layers.append({"type": t})
        else:
            expect(False, f"head layer type {t} is not known")
    expect(width == 1 and layers[-1]["type"] == "sigmoid", "the head does not end in one sigmoid output")
    return meta, layers


def random_head(out_dir, frames=16, hidden=32, seed=0, phrase="test"):
    """A head of the contract's shape with random weights, for tests (its scores mean nothing)."""
    rng = np.random.default_rng(seed)
    os.makedirs(out_dir, exist_ok=True)
    n = frames * EMB_DIM
    np.savez(os.path.join(out_dir, "head.npz"),
             w0=(rng.standard_normal((n, hidden)) / np.sqrt(n)).astype(np.float32),
             b0=(0.1 * rng.standard_normal(hidden)).astype(np.float32),
             g0=(1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32),
             be0=(0.1 * rng.standard_normal(hidden)).astype(np.float32),
             w1=(rng.standard_normal((hidden, 1)) / np.sqrt(hidden)).astype(np.float32),
             b1=np.zeros(1, np.float32))
    meta = {"phrase": phrase, "frames": frames, "embedding_dim": EMB_DIM, "smoothing": SMOOTHING,
            "threshold": DEFAULT_THRESHOLD, "refractory_seconds": REFRACTORY_SECONDS,
            "layers": [{"type": "dense", "w": "w0", "b": "b0"},
                       {"type": "layernorm", "gamma": "g0", "beta": "be0", "eps": 1e-5},
                       {"type": "relu"}, {"type": "dense", "w": "w1", "b": "b1"}, {"type": "sigmoid"}]}
    with open(os.path.join(out_dir, "head.json"), "w") as f:
        json.dump(meta, f, indent=1)


# --- the model file ---------------------------------------------------------------------------------------------

def export(mel, emb_layers, head_meta, head_layers, path, dtype="float16"):
    """Writes the format-2 .hpm: b"HPM1", u32 header length, JSON header, tensors. The embedding's weights are
    stored as `dtype` ([out][kt][kf][in], as TFLite keeps them); everything else float32."""
    tensors = []

    def add(name, a, dt="float32"):
        tensors.append((name, dt, np.asarray(a, np.float32)))

    add("mel.window", mel["window"])
    add("mel.filterbank", mel["filterbank"])
    emb_spec = []
    for i, layer in enumerate(emb_layers):
        if layer["type"] == "pool":
            emb_spec.append({"type": "pool", "pt": layer["pt"], "pf": layer["pf"]})
            continue
        add(f"emb{i}.weight", layer["weight"], dtype)
        add(f"emb{i}.bias", layer["bias"])
        emb_spec.append({"type": "conv", "kt": layer["kt"], "kf": layer["kf"], "pad_f": layer["pad_f"],
                         "in": int(layer["weight"].shape[3]), "out": int(layer["weight"].shape[0]),
                         "alpha": layer["alpha"], "floor": layer["floor"],
                         "weight": f"emb{i}.weight", "bias": f"emb{i}.bias"})
    head_spec = []
    for i, layer in enumerate(head_layers):
        t = layer["type"]
        if t == "dense":
            add(f"head{i}.w", layer["w"])
            add(f"head{i}.b", layer["b"])
            head_spec.append({"type": t, "w": f"head{i}.w", "b": f"head{i}.b"})
        elif t == "layernorm":
            add(f"head{i}.gamma", layer["gamma"])
            add(f"head{i}.beta", layer["beta"])
            head_spec.append({"type": t, "gamma": f"head{i}.gamma", "beta": f"head{i}.beta", "eps": layer["eps"]})
        else:
            head_spec.append({"type": t})

    table, blobs, off = [], [], 0
    for name, dt, a in tensors:
        raw = a.astype("<f2" if dt == "float16" else "<f4").tobytes()
        table.append({"name": name, "dtype": dt, "shape": list(a.shape), "offset": off, "bytes": len(raw)})
        blobs.append(raw)
        off += len(raw)
        pad = (-off) % 4  # float32 tensors stay 4-byte aligned in the payload
        blobs.append(b"\0" * pad)
        off += pad
    header = {
        "format": FORMAT, "phrase": head_meta["phrase"], "sample_rate": SAMPLE_RATE,
        "mel": {k: v for k, v in mel.items() if k not in ("window", "filterbank")},
        "embedding": {"frames": EMB_FRAMES, "step": EMB_STEP, "dim": EMB_DIM, "layers": emb_spec},
        "head": {"frames": head_meta["frames"], "layers": head_spec},
        "smoothing": head_meta["smoothing"], "default_threshold": head_meta["threshold"],
        "refractory_seconds": head_meta["refractory_seconds"],
        "source": "Google speech_embedding (Apache-2.0) from pyopen-wakeword 1.1.0: melspectrogram.tflite, "
                  "embedding_model.tflite",
        "tensors": table,
    }
    if head_meta.get("ring_threshold") is not None:
        header["ring_threshold"] = head_meta["ring_threshold"]
    for k in ("evaluation",):
        if k in head_meta:
            header[k] = head_meta[k]
    hpmfile.write(path, header, b"".join(blobs))


def load(path):
    """A format-2 .hpm -> (header, dict of float32 arrays); float16 tensors widened as the Swift loader does."""
    header, tensors = hpmfile.read(path)
    if header.get("format") != FORMAT:
        raise HotPhraseError(path, f"model file format {header.get('format')}, not {FORMAT}")
    return header, tensors


# --- reference inference (numpy) --------------------------------------------------------------------------------

def mel_frames(header, ts, samples):
    """Mel frames of a whole clip (int16-scaled floats), as the Swift front end streams them: frame j covers
    samples 160j ..< 160j + 512, and the top-dB clamp acts on groups of 8 frames (one TFLite call each). Only
    whole groups are returned. Already `mel / 10 + 2`."""
    m = header["mel"]
    nfft, hop, group = m["fft"], m["hop"], m["group"]
    x = np.asarray(samples, np.float64)
    count = (len(x) - nfft) // hop + 1 if len(x) >= nfft else 0
    count -= count % group
    if count == 0:
        return np.zeros((0, m["mels"]), np.float32)
    idx = np.arange(count)[:, None] * hop + np.arange(nfft)
    spec = np.fft.rfft(x[idx] * ts["mel.window"], nfft)
    power = spec.real ** 2 + spec.imag ** 2
    db = 10 * np.log10(np.maximum(power @ ts["mel.filterbank"], m["power_floor"]))
    db = db.reshape(-1, group, m["mels"])
    db = np.maximum(db, db.max(axis=(1, 2), keepdims=True) - m["top_db"]).reshape(-1, m["mels"])
    return (db * m["scale"] + m["offset"]).astype(np.float32)


def _conv(x, w, b, pad_f):
    """x [T, F, Cin], w [Cout, kt, kf, Cin] -> [T - kt + 1, F + 2 pad_f - kf + 1, Cout]."""
    _, kt, kf, _ = w.shape
    if pad_f:
        x = np.pad(x, ((0, 0), (pad_f, pad_f), (0, 0)))
    t, f = x.shape[0] - kt + 1, x.shape[1] - kf + 1
    out = np.zeros((t, f, w.shape[0]), np.float64)
    for i in range(kt):
        for j in range(kf):
            out += x[i:i + t, j:j + f, :] @ w[:, i, j, :].T
    return out + b


def embed(header, ts, mels):
    """Embeddings of every 8th 76-frame window of mel frames (frames, 32) -> (windows, 96); window k starts at
    frame 8k."""
    e = header["embedding"]
    out = []
    for start in range(0, len(mels) - e["frames"] + 1, e["step"]):
        x = mels[start:start + e["frames"], :, None].astype(np.float64)
        for layer in e["layers"]:
            if layer["type"] == "pool":
                pt, pf = layer["pt"], layer["pf"]
                t, f = x.shape[0] // pt, x.shape[1] // pf
                x = x[:t * pt, :f * pf].reshape(t, pt, f, pf, -1).max(axis=(1, 3))
            else:
                x = _conv(x, ts[layer["weight"]], ts[layer["bias"]], layer["pad_f"])
                if layer["alpha"] is not None:
                    x = np.maximum(np.where(x >= 0, x, layer["alpha"] * x), layer["floor"])
        out.append(x.reshape(-1))
    return np.asarray(out, np.float32).reshape(-1, e["dim"])


def head_scores(header, ts, embeddings):
    """The head's output for every embedding step that has `frames` embeddings behind it (oldest first)."""
    n = header["head"]["frames"]
    out = []
    for end in range(n, len(embeddings) + 1):
        x = embeddings[end - n:end].reshape(-1).astype(np.float64)
        for layer in header["head"]["layers"]:
            t = layer["type"]
            if t == "dense":
                x = x @ ts[layer["w"]] + ts[layer["b"]]
            elif t == "layernorm":
                mu, var = x.mean(), x.var()
                x = (x - mu) / np.sqrt(var + layer["eps"]) * ts[layer["gamma"]] + ts[layer["beta"]]
            elif t == "relu":
                x = np.maximum(x, 0)
            else:
                x = 1 / (1 + np.exp(-x))
        out.append(float(x[0]))
    return np.asarray(out, np.float32)


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("head_dir")
    ap.add_argument("out")
    ap.add_argument("--models", default=None, help="pyopen_wakeword/models (default: the installed wheel's)")
    ap.add_argument("--dtype", default="float16", choices=["float16", "float32"])
    ap.add_argument("--threshold", type=float, default=None,
                    help="the file's default threshold in place of the head's own (head.json), e.g. one chosen on "
                         "held-out hours of the speaker's own sound")
    ap.add_argument("--ring-threshold", type=float, default=None,
                    help="a stop word's threshold over a ring (the speaker's one known sound), where it may listen "
                         "closer than over an answer; without it the default threshold holds there too")
    a = ap.parse_args(argv)
    for name, value in (("--threshold", a.threshold), ("--ring-threshold", a.ring_threshold)):
        if value is not None and not 0 < value < 1:
            ap.error(f"{name} {value}: must be between 0 and 1")
    models = a.models or default_models_dir()
    mel = read_mel(os.path.join(models, "melspectrogram.tflite"))
    layers = read_embedding(os.path.join(models, "embedding_model.tflite"))
    meta, head = read_head(a.head_dir)
    if a.threshold is not None:
        meta = {**meta, "threshold": a.threshold}
    if a.ring_threshold is not None:
        meta = {**meta, "ring_threshold": a.ring_threshold}
    export(mel, layers, meta, head, a.out, a.dtype)
    convs = [x for x in layers if x["type"] == "conv"]
    params = sum(x["weight"].size + x["bias"].size for x in convs)
    print(f"{a.out}: {os.path.getsize(a.out)} bytes; {len(convs)} convolutions, {params} parameters ({a.dtype}); "
          f"head '{meta['phrase']}' over {meta['frames']} embeddings")


if __name__ == "__main__":
    sys.exit(main())
