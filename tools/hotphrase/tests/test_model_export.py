"""The model files' export round trip, both formats: a tiny random model written and read back (hotphrase/hpmfile.py,
the reader the Swift loader mirrors), tensors and header fields compared, the quantisation error bounded.

Format 1 (.hpm v1, hotphrase/model.py): int8 weights with a float32 scale per output row. Format 2 (the speech
embedding, hotphrase/export_embedding.py): float16 or float32 embedding weights, float32 head. numpy only, except
the one check against keras itself, which is skipped without tensorflow.
"""
import contextlib
import importlib.util
import io
import json
import os
import struct
import tempfile
import unittest

import numpy as np

from hotphrase import constants as C
from hotphrase import export_embedding as X
from hotphrase import hpmfile
from hotphrase import model as M
from hotphrase.errors import HotPhraseError

CHANNELS = 6
HAVE_TF = importlib.util.find_spec("tensorflow") is not None and importlib.util.find_spec("keras") is not None


def random_weights(rng, channels=CHANNELS):
    """A format-1 network's weights in the file's layout (model.keras_weights), out-major; scaled so that its
    outputs on random features spread over about 0.3-0.8 (saturated ones would hide differences)."""
    w = {"in.weight": rng.standard_normal((channels, C.STACK * C.NMEL)) * 0.2,
         "in.bias": rng.standard_normal(channels) * 0.1,
         "out.weight": rng.standard_normal((1, channels)) * 0.1, "out.bias": rng.standard_normal(1) * 0.1}
    for i in range(len(M.DILATIONS)):
        w[f"dw{i}.weight"] = rng.standard_normal((channels, M.KERNEL)) * 0.5
        w[f"dw{i}.bias"] = rng.standard_normal(channels) * 0.1
        w[f"pw{i}.weight"] = rng.standard_normal((channels, channels)) * 0.4
        w[f"pw{i}.bias"] = rng.standard_normal(channels) * 0.1
    return {k: v.astype(np.float32) for k, v in w.items()}


def streaming_probabilities(h, ts, feats):
    """The network one 30 ms step at a time, keeping each block's past inputs (the rule Sources/HotPhrase/
    Network.swift streams with ring buffers), written apart from model.probabilities to check it."""
    k, dil, stack = h["kernel"], h["dilations"], h["stack"]
    history = [[] for _ in dil]
    out = []
    for t in range(len(feats) // stack):
        v = ((feats[stack * t:stack * (t + 1)] - ts["norm.mean"]) * ts["norm.inv_std"]).reshape(-1)
        x = np.maximum(ts["in.weight"] @ v + ts["in.bias"], 0)
        for i, d in enumerate(dil):
            history[i].append(x)
            if len(history[i]) <= (k - 1) * d:
                break  # this block (and so every later one) has no output yet
            # tap j reads the input (k - 1 - j) * d steps back
            acc = sum(ts[f"dw{i}.weight"][:, j] * history[i][-1 - (k - 1 - j) * d] for j in range(k))
            y = np.maximum(ts[f"pw{i}.weight"] @ np.maximum(acc + ts[f"dw{i}.bias"], 0) + ts[f"pw{i}.bias"], 0)
            x = x + y  # the residual adds the block's newest input
        else:
            out.append(1 / (1 + np.exp(-(ts["out.weight"][0] @ x + ts["out.bias"][0]))))
    return np.array(out)


class FakeLayer:
    def __init__(self, *weights):
        self.weights = list(weights)

    def get_weights(self):
        return self.weights


class FakeKeras:
    """Just enough of a keras model for model.export: its layers' weights in keras's own shapes."""

    def __init__(self, layers):
        self.layers = layers

    def get_layer(self, name):
        return self.layers[name]


class Format1(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "m.hpm")
        self.rng = np.random.default_rng(11)
        self.mean = self.rng.standard_normal(C.NMEL).astype(np.float32)
        self.std = (0.5 + self.rng.random(C.NMEL)).astype(np.float32)
        self.meta = {"phrase": "Test", "default_threshold": 0.75, "refractory_seconds": 2.0, "training": {"seed": 3}}

    def tearDown(self):
        self.tmp.cleanup()

    def test_header_fields(self):
        M.write(random_weights(self.rng), self.mean, self.std, self.path, self.meta)
        h, _ = hpmfile.read(self.path)
        expect = {"format": 1, "sample_rate": 16000, "window": 480, "hop": 160, "fft": 512, "mels": 40,
                  "fmin": 60.0, "fmax": 7600.0, "log_floor": 1e-6, "stack": 3, "channels": CHANNELS, "kernel": 5,
                  "dilations": [1, 2, 4, 8, 1], "smoothing": 3, "phrase": "Test", "default_threshold": 0.75,
                  "refractory_seconds": 2.0, "training": {"seed": 3}}
        for k, v in expect.items():
            self.assertEqual(h[k], v, k)
        names = [t["name"] for t in h["tensors"]]
        self.assertEqual(names[:4], ["norm.mean", "norm.inv_std", "in.weight", "in.bias"])
        self.assertEqual(names[-2:], ["out.weight", "out.bias"])
        self.assertEqual(len(names), 4 + 4 * len(M.DILATIONS) + 2)

    def test_the_container(self):
        M.write(random_weights(self.rng), self.mean, self.std, self.path, self.meta)
        with open(self.path, "rb") as f:
            raw = f.read()
        self.assertEqual(raw[:4], b"HPM1")
        (n,) = struct.unpack("<I", raw[4:8])
        header = json.loads(raw[8:8 + n])
        payload = len(raw) - 8 - n
        ends = []
        for t in header["tensors"]:
            count = int(np.prod(t["shape"]))
            self.assertEqual(t["bytes"], count * (1 if t["dtype"] == "int8" else 4), t["name"])
            ends.append(t["offset"] + t["bytes"])
            if t["dtype"] == "int8":  # its scales right after it, one float32 per output row
                self.assertEqual(t["scale_offset"], t["offset"] + t["bytes"])
                ends.append(t["scale_offset"] + 4 * t["shape"][0])
        self.assertEqual(max(ends), payload)

    def test_float_tensors_exact_int8_within_half_a_step(self):
        w = random_weights(self.rng)
        M.write(w, self.mean, self.std, self.path, self.meta)
        h, ts = hpmfile.read(self.path)
        np.testing.assert_array_equal(ts["norm.mean"], self.mean)
        np.testing.assert_allclose(ts["norm.inv_std"], 1.0 / self.std, rtol=1e-7)
        for name, a in w.items():
            self.assertEqual(ts[name].shape, a.shape, name)
            self.assertEqual(ts[name].dtype, np.float32, name)
            if name.endswith(".bias"):
                np.testing.assert_array_equal(ts[name], a, name)
                continue
            # symmetric int8 per output row: the row's largest weight is +-127 steps, and rounding is off by at
            # most half a step
            step = np.abs(a).max(axis=1, keepdims=True) / 127.0
            err = np.abs(ts[name] - a)
            self.assertTrue(np.all(err <= step / 2 * (1 + 1e-5)), f"{name}: {(err / step).max()} steps off")
            self.assertGreater(err.max(), 0.0, name)  # it really was quantised
            # each row's largest weight survives (it is exactly 127 steps)
            rows = np.arange(len(a))
            big = np.abs(a).argmax(axis=1)
            np.testing.assert_allclose(ts[name][rows, big], a[rows, big], rtol=1e-6)

    def test_weights_on_the_int8_grid_come_back_exactly(self):
        # weights that are whole steps of their row's scale lose nothing: any mix-up of rows and columns would
        # show here
        w = random_weights(self.rng)
        for name in w:
            if name.endswith(".weight"):
                q = self.rng.integers(-127, 128, w[name].shape).astype(np.float32)
                q[:, 0] = 127
                w[name] = q * np.linspace(0.01, 0.05, len(q), dtype=np.float32)[:, None]
        M.write(w, self.mean, self.std, self.path, self.meta)
        _, ts = hpmfile.read(self.path)
        for name in w:
            np.testing.assert_allclose(ts[name], w[name], rtol=1e-6, atol=0, err_msg=name)

    def test_keras_layout(self):
        # model.export reads keras's kernel shapes: Conv1D (1, in, out), DepthwiseConv1D (K, C, 1), Dense (C, 1)
        w = random_weights(self.rng)
        layers = {"in": FakeLayer(w["in.weight"].T[None], w["in.bias"]),
                  "out": FakeLayer(w["out.weight"].T, w["out.bias"])}
        for i in range(len(M.DILATIONS)):
            layers[f"dw{i}"] = FakeLayer(w[f"dw{i}.weight"].T[:, :, None], w[f"dw{i}.bias"])
            layers[f"pw{i}"] = FakeLayer(w[f"pw{i}.weight"].T[None], w[f"pw{i}.bias"])
        M.export(FakeKeras(layers), self.mean, self.std, self.path, self.meta)
        other = os.path.join(self.tmp.name, "w.hpm")
        M.write(w, self.mean, self.std, other, self.meta)
        with open(self.path, "rb") as a, open(other, "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_reference_inference_on_the_file(self):
        # the dequantised file scores like the float weights (within 0.01), and the causal network gives a
        # prefix of the audio the first outputs of the whole (what the streaming detector relies on)
        w = random_weights(self.rng)
        M.write(w, self.mean, self.std, self.path, self.meta)
        h, ts = hpmfile.read(self.path)
        feats = self.rng.standard_normal((900, C.NMEL)).astype(np.float32) + self.mean
        p = M.probabilities(h, ts, feats)
        self.assertEqual(len(p), 900 // 3 - (M.RECEPTIVE_STEPS - 1))
        floats = {"norm.mean": self.mean, "norm.inv_std": 1.0 / self.std, **w}
        np.testing.assert_allclose(p, M.probabilities(h, floats, feats), atol=0.01)  # int8: 0.002 here
        part = M.probabilities(h, ts, feats[:600])
        np.testing.assert_allclose(part, p[:len(part)], rtol=0, atol=1e-6)
        self.assertEqual(len(M.probabilities(h, ts, feats[:3 * M.RECEPTIVE_STEPS - 1])), 0)

    def test_streaming_equals_the_whole_sequence(self):
        # every convolution is causal, so one step at a time gives exactly the whole-sequence outputs
        M.write(random_weights(self.rng), self.mean, self.std, self.path, self.meta)
        h, ts = hpmfile.read(self.path)
        feats = self.rng.standard_normal((3 * 100 + 2, C.NMEL)).astype(np.float32) + self.mean
        whole = M.probabilities(h, ts, feats)
        self.assertEqual(len(whole), 100 - 64)
        self.assertGreater(whole.std(), 0.01)  # not saturated
        np.testing.assert_allclose(streaming_probabilities(h, ts, feats), whole, rtol=0, atol=1e-5)

    def test_not_a_model(self):
        with open(self.path, "wb") as f:
            f.write(b"RIFF" + bytes(20))
        with self.assertRaises(HotPhraseError) as e:
            hpmfile.read(self.path)
        self.assertIn(self.path, str(e.exception))
        with open(self.path, "wb") as f:
            f.write(b"HPM1" + struct.pack("<I", 999) + b"{}")
        with self.assertRaises(HotPhraseError):
            hpmfile.read(self.path)

    def test_update_header(self):
        M.write(random_weights(self.rng), self.mean, self.std, self.path, self.meta)
        _, before = hpmfile.read(self.path)
        M.update_header(self.path, {"default_threshold": 0.999, "evaluation": {"negative_hours": 5.1}})
        h, after = hpmfile.read(self.path)
        self.assertEqual((h["default_threshold"], h["evaluation"]), (0.999, {"negative_hours": 5.1}))
        for name in before:
            np.testing.assert_array_equal(after[name], before[name])

    @unittest.skipUnless(HAVE_TF, "tensorflow and keras are not installed (tools/hotphrase/setup-venv.sh)")
    def test_keras_network_equals_the_reference_inference(self):
        import keras
        keras.utils.set_random_seed(5)
        m = M.build_keras(CHANNELS, self.mean, self.std)
        M.export(m, self.mean, self.std, self.path, self.meta)
        h, ts = hpmfile.read(self.path)
        feats = self.rng.standard_normal((M.WINDOW_FRAMES + 30, C.NMEL)).astype(np.float32) + self.mean
        # keras sees one window per output: the last WINDOW_FRAMES frames, ending on a step boundary
        ends = range(M.WINDOW_FRAMES, len(feats) + 1, M.STACK)
        k = m.predict(np.stack([feats[e - M.WINDOW_FRAMES:e] for e in ends]), verbose=0).reshape(-1)
        floats = {"norm.mean": self.mean, "norm.inv_std": 1.0 / self.std, **M.keras_weights(m)}
        np.testing.assert_allclose(M.probabilities(h, floats, feats), k, atol=1e-5)
        np.testing.assert_allclose(M.probabilities(h, ts, feats), k, atol=0.01)


# --- format 2 ---------------------------------------------------------------------------------------------------

def random_mel(rng):
    """A mel front end of the exporter's shape (export_embedding.read_mel) with random numbers."""
    window = np.zeros(512, np.float32)
    window[56:456] = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)
    return {"fft": 512, "hop": 160, "mels": 32, "group": 8, "power_floor": 1e-10, "top_db": 80.0, "scale": 0.1,
            "offset": 2.0, "window": window, "filterbank": rng.random((257, 32)).astype(np.float32) * 0.01}


def conv(rng, kt, kf, cin, cout, pad_f, act=True):
    return {"type": "conv", "kt": kt, "kf": kf, "pad_f": pad_f,
            "weight": (rng.standard_normal((cout, kt, kf, cin)) / np.sqrt(kt * kf * cin)).astype(np.float32),
            "bias": (rng.standard_normal(cout) * 0.1).astype(np.float32),
            "alpha": 0.2 if act else None, "floor": -0.4 if act else None}


def random_embedding(rng):
    """A small network of the real one's kinds of layers (76 frames x 32 mels -> 96): convolutions VALID in time
    and padded in frequency, LeakyReLU and floor, max-pools."""
    # (the first has 27 weights: 54 bytes in float16, so the next tensor needs padding to stay aligned)
    return [conv(rng, 3, 3, 1, 3, 1), {"type": "pool", "pt": 2, "pf": 2},  # 74 x 32 -> 37 x 16
            conv(rng, 3, 1, 3, 6, 0), {"type": "pool", "pt": 2, "pf": 2},  # 35 x 16 -> 17 x 8
            conv(rng, 1, 3, 6, 6, 1), conv(rng, 3, 1, 6, 8, 0), {"type": "pool", "pt": 3, "pf": 2},  # 15x8 -> 5x4
            {"type": "pool", "pt": 1, "pf": 4},  # 5 x 1
            conv(rng, 5, 1, 8, 96, 0, act=False)]  # 1 x 1 x 96


class Format2(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.rng = np.random.default_rng(21)
        self.mel = random_mel(self.rng)
        self.emb = random_embedding(self.rng)
        self.head_dir = os.path.join(self.tmp.name, "head")
        X.random_head(self.head_dir, frames=4, hidden=8, seed=3, phrase="test phrase")
        self.meta, self.head = X.read_head(self.head_dir)

    def tearDown(self):
        self.tmp.cleanup()

    def export(self, dtype, meta=None):
        path = os.path.join(self.tmp.name, f"{dtype}.hpm")
        X.export(self.mel, self.emb, meta or self.meta, self.head, path, dtype)
        return X.load(path)

    def test_header_fields(self):
        h, _ = self.export("float16", {**self.meta, "evaluation": {"negative_hours": 5.5}})
        self.assertEqual(h["format"], 2)
        self.assertEqual(h["phrase"], "test phrase")
        self.assertEqual(h["sample_rate"], 16000)
        self.assertEqual(h["mel"], {"fft": 512, "hop": 160, "mels": 32, "group": 8, "power_floor": 1e-10,
                                    "top_db": 80.0, "scale": 0.1, "offset": 2.0})
        self.assertEqual((h["embedding"]["frames"], h["embedding"]["step"], h["embedding"]["dim"]), (76, 8, 96))
        self.assertEqual([x["type"] for x in h["embedding"]["layers"]], [x["type"] for x in self.emb])
        first = h["embedding"]["layers"][0]
        self.assertEqual({k: first[k] for k in ("kt", "kf", "pad_f", "in", "out", "alpha", "floor")},
                         {"kt": 3, "kf": 3, "pad_f": 1, "in": 1, "out": 3, "alpha": 0.2, "floor": -0.4})
        self.assertIsNone(h["embedding"]["layers"][-1]["alpha"])
        self.assertEqual(h["head"]["frames"], 4)
        self.assertEqual([x["type"] for x in h["head"]["layers"]], ["dense", "layernorm", "relu", "dense", "sigmoid"])
        self.assertEqual((h["smoothing"], h["default_threshold"], h["refractory_seconds"]), (3, 0.5, 2.0))
        self.assertEqual(h["evaluation"], {"negative_hours": 5.5})
        for t in h["tensors"]:
            self.assertEqual(t["offset"] % 4, 0, t["name"])  # 4-byte aligned, for the Swift loader
            self.assertEqual(t["dtype"], "float16" if t["name"].endswith(".weight") and t["name"].startswith("emb")
                             else "float32", t["name"])

    def test_float32_round_trip_is_exact(self):
        _, ts = self.export("float32")
        np.testing.assert_array_equal(ts["mel.window"], self.mel["window"])
        np.testing.assert_array_equal(ts["mel.filterbank"], self.mel["filterbank"])
        for i, layer in enumerate(self.emb):
            if layer["type"] == "conv":
                np.testing.assert_array_equal(ts[f"emb{i}.weight"], layer["weight"])
                np.testing.assert_array_equal(ts[f"emb{i}.bias"], layer["bias"])
        z = np.load(os.path.join(self.head_dir, "head.npz"))
        np.testing.assert_array_equal(ts["head0.w"], z["w0"])
        np.testing.assert_array_equal(ts["head1.gamma"], z["g0"])
        np.testing.assert_array_equal(ts["head3.w"], z["w1"])

    def test_float16_weights_within_half_an_ulp(self):
        _, ts = self.export("float16")
        for i, layer in enumerate(self.emb):
            if layer["type"] != "conv":
                continue
            w, back = layer["weight"], ts[f"emb{i}.weight"]
            self.assertEqual(back.dtype, np.float32)
            # round to nearest float16: at most half of float16's spacing, 2^-11 relative for normal numbers
            # (and 2^-25 absolute below them)
            bound = np.maximum(np.abs(w) * 2.0 ** -11, 2.0 ** -25)
            self.assertTrue(np.all(np.abs(back - w) <= bound), f"emb{i}.weight")
            self.assertGreater(np.abs(back - w).max(), 0.0)
            np.testing.assert_array_equal(ts[f"emb{i}.bias"], layer["bias"])  # biases stay float32

    def test_reference_inference(self):
        h16, t16 = self.export("float16")
        h32, t32 = self.export("float32")
        x = (self.rng.standard_normal(C.SAMPLE_RATE * 2) * 3000).astype(np.float32)  # int16-scaled samples
        mel = X.mel_frames(h32, t32, x)
        self.assertEqual(mel.shape, (((len(x) - 512) // 160 + 1) // 8 * 8, 32))
        np.testing.assert_array_equal(X.mel_frames(h16, t16, x), mel)  # the mel front end is float32 in both
        e32, e16 = X.embed(h32, t32, mel), X.embed(h16, t16, mel)
        self.assertEqual(e32.shape, ((len(mel) - 76) // 8 + 1, 96))
        self.assertLess(np.abs(e16 - e32).max(), 1e-2 * np.abs(e32).max())
        s = X.head_scores(h32, t32, e32)
        self.assertEqual(len(s), len(e32) - 4 + 1)
        self.assertTrue(np.all((s > 0) & (s < 1)))

    def test_mel_known_values(self):
        # the last mel channel hears only the Nyquist bin, where a low tone has (next to) no power
        self.mel["filterbank"][:, 31] = 0.0
        self.mel["filterbank"][256, 31] = 1.0
        h, ts = self.export("float32")
        # silence: power 0 -> the floor 1e-10 -> -100 dB -> / 10 + 2 = -8
        np.testing.assert_array_equal(X.mel_frames(h, ts, np.zeros(1760, np.float32)), np.full((8, 32), -8.0))
        # frame j is samples [160 j, 160 j + 512): 1632 samples make a whole group of 8 frames, 1631 nothing
        self.assertEqual(X.mel_frames(h, ts, np.zeros(1632, np.float32)).shape, (8, 32))
        self.assertEqual(X.mel_frames(h, ts, np.zeros(1631, np.float32)).shape, (0, 32))
        # the top-dB clamp is per group of 8 frames (one TFLite call): a loud first group does not lift the quiet
        # second group's floor, and within a group nothing is more than 80 dB (8 after the scale) below its top
        x = np.zeros(1280 * 2 + 480, np.float32)
        x[:1280] = 10000 * np.sin(np.arange(1280) * 0.3)
        m = X.mel_frames(h, ts, x)
        self.assertEqual(m.shape, (16, 32))
        np.testing.assert_array_equal(m[8:], -8.0)
        top = float(m[:8].max())
        self.assertGreater(top, 0.0)
        # frames 0-4 lie inside the tone (frames 5-7 reach the step at sample 1280, which is broadband): their last
        # channel is clamped to 80 dB below the group's top
        np.testing.assert_allclose(m[:5, 31], top - 8.0, atol=1e-5)
        self.assertGreaterEqual(float(m[:8].min()), top - 8.0 - 1e-5)

    def test_load_refuses_format_1(self):
        path = os.path.join(self.tmp.name, "v1.hpm")
        M.write(random_weights(self.rng), np.zeros(40, np.float32), np.ones(40, np.float32), path, {})
        with self.assertRaises(HotPhraseError) as e:
            X.load(path)
        self.assertIn("format 1", str(e.exception))

    def test_the_threshold_chosen_outside_the_head(self):
        """--threshold writes that default threshold in place of head.json's, --ring-threshold a stop word's over a ring
        (none without it); out of (0, 1) is refused first."""
        out = os.path.join(self.tmp.name, "t.hpm")
        saved = X.read_mel, X.read_embedding
        X.read_mel, X.read_embedding = (lambda _: self.mel), (lambda _: self.emb)
        said, errors = io.StringIO(), io.StringIO()  # the tool's report and argparse's refusals, kept for the asserts
        try:
            with contextlib.redirect_stdout(said), contextlib.redirect_stderr(errors):
                X.main([self.head_dir, out, "--models", self.tmp.name, "--threshold", "0.913"])
                self.assertEqual(X.load(out)[0]["default_threshold"], 0.913)
                self.assertNotIn("ring_threshold", X.load(out)[0])
                X.main([self.head_dir, out, "--models", self.tmp.name])
                self.assertEqual(X.load(out)[0]["default_threshold"], self.meta["threshold"])
                X.main([self.head_dir, out, "--models", self.tmp.name, "--threshold", "0.9", "--ring-threshold", "0.7"])
                self.assertEqual((X.load(out)[0]["default_threshold"], X.load(out)[0]["ring_threshold"]), (0.9, 0.7))
                for option in ("--threshold", "--ring-threshold"):
                    for bad in ("1.5", "0", "nan"):
                        with self.assertRaises(SystemExit):
                            X.main([self.head_dir, out, "--models", self.tmp.name, option, bad])
            self.assertIn("t.hpm", said.getvalue())
            self.assertEqual(errors.getvalue().count("must be between 0 and 1"), 6, errors.getvalue())
        finally:
            X.read_mel, X.read_embedding = saved

    def test_read_head_checks_the_contract(self):
        z = dict(np.load(os.path.join(self.head_dir, "head.npz")))
        z["w1"] = z["w1"][:5]  # the second dense layer no longer fits the first's width
        np.savez(os.path.join(self.head_dir, "head.npz"), **z)
        with self.assertRaises(HotPhraseError) as e:
            X.read_head(self.head_dir)
        self.assertIn("head.json", str(e.exception))
        self.assertIn("dense", str(e.exception))


if __name__ == "__main__":
    unittest.main()
