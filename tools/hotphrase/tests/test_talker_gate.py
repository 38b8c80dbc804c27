"""The dominant-talker gate (talker_gate.py, talker_gate_train.py): gains of one give the samples back, gains at the
floor take the power down by the floor, the numpy GRU is PyTorch's, a frame's gains depend only on the frames up to
it, the front end's spec parses and names bad files clearly, and (with PyTorch) training on voices over a quieter
second voice learns to take the quieter one out."""
import os
import tempfile
import unittest

import numpy as np

from hotphrase import speex
from hotphrase import talker_gate as G
from hotphrase.constants import NMEL
from hotphrase.errors import HotPhraseError

try:
    import torch
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
try:  # the STFT both ways (scipy 1.12 or later); the gains themselves are numpy only
    from scipy.signal import ShortTimeFFT  # noqa: F401
    HAVE_STFT = True
except ImportError:
    HAVE_STFT = False
NEEDS_STFT = unittest.skipUnless(HAVE_STFT, "needs scipy 1.12 or later (ShortTimeFFT)")


def weights(hidden=8, b_out=0.0, floor=0.03, seed=0, scale=0.3, n=NMEL):
    rng = np.random.default_rng(seed)
    return {"mean": np.zeros(n, np.float32) - 12, "std": np.ones(n, np.float32) * 3,
            "w_ih": rng.normal(0, scale, (3 * hidden, n)).astype(np.float32),
            "w_hh": rng.normal(0, scale, (3 * hidden, hidden)).astype(np.float32),
            "b_ih": rng.normal(0, scale, 3 * hidden).astype(np.float32),
            "b_hh": rng.normal(0, scale, 3 * hidden).astype(np.float32),
            "w_out": (rng.normal(0, scale, (n, hidden)) * (b_out == 0)).astype(np.float32),
            "b_out": np.full(n, b_out, np.float32), "floor": np.float32(floor)}


def write(d, w, name="g.npz"):
    p = os.path.join(d, name)
    np.savez(p, **w)
    return p


class Gains(unittest.TestCase):
    def test_bin_map_rows_sum_to_one(self):
        m = G.bin_map()
        self.assertEqual(m.shape, (257, NMEL))
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-5)
        self.assertTrue((m >= 0).all())

    @NEEDS_STFT
    def test_unit_gains_give_the_samples_back(self):
        x = np.random.default_rng(1).uniform(-0.5, 0.5, 16001).astype(np.float32)
        for res, size in G.RESOLUTIONS.items():
            with tempfile.TemporaryDirectory() as d:
                g = G.Gate(write(d, weights(b_out=40.0, n=size)))  # sigmoid(40) = 1 to float precision
            for n in (1, 159, 160, 481, 16001):
                np.testing.assert_allclose(g.process_float(x[:n]), x[:n], atol=1e-4, err_msg=f"{res}, n={n}")

    @NEEDS_STFT
    def test_per_bin_gains_reach_single_bins(self):
        # a gain of one on bin 32 (1 kHz) and the floor elsewhere keeps much of a 1 kHz tone (its window's main
        # lobe spreads it over bins 31-33, so not all of it) and takes out a 3 kHz one
        w = weights(b_out=-40.0, n=G.NBINS, floor=0.01)
        w["b_out"][32] = 40.0
        with tempfile.TemporaryDirectory() as d:
            g = G.Gate(write(d, w))
        t = np.arange(16000) / 16000
        one, three = 0.3 * np.sin(2 * np.pi * 1000 * t), 0.3 * np.sin(2 * np.pi * 3000 * t)
        y = g.process_float((one + three).astype(np.float32))[1000:-1000]
        self.assertGreater(abs(np.dot(y, one[1000:-1000])) / np.dot(one[1000:-1000], one[1000:-1000]), 0.45)
        self.assertLess(abs(np.dot(y, three[1000:-1000])) / np.dot(three[1000:-1000], three[1000:-1000]), 0.05)

    @NEEDS_STFT
    def test_floor_gains_take_the_power_down_by_the_floor(self):
        with tempfile.TemporaryDirectory() as d:
            g = G.Gate(write(d, weights(b_out=-40.0, floor=0.1)))
        x = np.random.default_rng(2).uniform(-0.5, 0.5, 8000).astype(np.float32)
        y = g.process_float(x)
        ratio = np.mean(y[1000:-1000] ** 2) / np.mean(x[1000:-1000] ** 2)
        self.assertAlmostEqual(ratio, 0.01, delta=0.002)

    @NEEDS_STFT
    def test_int16_in_and_out_of_the_same_length(self):
        with tempfile.TemporaryDirectory() as d:
            g = G.Gate(write(d, weights()))
        q = (np.random.default_rng(3).uniform(-0.3, 0.3, 5000) * 32768).astype(np.int16)
        y = g(q)
        self.assertEqual((y.dtype, len(y)), (np.int16, len(q)))
        self.assertEqual(len(g(q[:0])), 0)

    def test_a_frames_gains_depend_only_on_the_frames_before_it(self):
        with tempfile.TemporaryDirectory() as d:
            g = G.Gate(write(d, weights()))
        f = np.random.default_rng(4).normal(0, 1, (60, NMEL)).astype(np.float32)
        whole = g.gains(f)
        np.testing.assert_allclose(g.gains(f[:25]), whole[:25], atol=1e-6)
        f2 = f.copy()
        f2[40:] += 5  # a change later on changes only the later gains
        changed = g.gains(f2)
        np.testing.assert_allclose(changed[:40], whole[:40], atol=1e-6)
        self.assertGreater(np.abs(changed[40:] - whole[40:]).max(), 1e-3)

    @unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed")
    def test_the_numpy_gru_is_pytorchs(self):
        w = weights(hidden=12, seed=5, scale=0.5)
        gru = torch.nn.GRU(NMEL, 12, batch_first=True)
        lin = torch.nn.Linear(12, NMEL)
        with torch.no_grad():
            for name, key in (("weight_ih_l0", "w_ih"), ("weight_hh_l0", "w_hh"), ("bias_ih_l0", "b_ih"),
                              ("bias_hh_l0", "b_hh")):
                getattr(gru, name).copy_(torch.tensor(w[key]))
            lin.weight.copy_(torch.tensor(w["w_out"]))
            lin.bias.copy_(torch.tensor(w["b_out"]))
            f = np.random.default_rng(6).normal(0, 1, (50, NMEL)).astype(np.float32)
            h, _ = gru(torch.tensor(f)[None])
            want = w["floor"] + (1 - w["floor"]) * torch.sigmoid(lin(h))[0].numpy()
        with tempfile.TemporaryDirectory() as d:
            got = G.Gate(write(d, w)).gains(f)
        np.testing.assert_allclose(got, want, atol=1e-5)


@NEEDS_STFT
class Oracle(unittest.TestCase):
    def test_without_noise_it_is_no_gate(self):
        x = np.random.default_rng(8).uniform(-0.5, 0.5, 8000).astype(np.float32)
        for res in G.RESOLUTIONS:
            np.testing.assert_allclose(G.oracle(x, x, res), x, atol=1e-4, err_msg=res)

    def test_it_takes_out_what_is_not_the_speech_down_to_its_floor(self):
        t = np.arange(16000) / 16000
        speech = (0.3 * np.sin(2 * np.pi * 500 * t)).astype(np.float32)
        noise = (0.3 * np.sin(2 * np.pi * 5000 * t)).astype(np.float32)
        mid = slice(1000, -1000)
        for res in G.RESOLUTIONS:
            y = G.oracle(speech + noise, speech, res)
            kept_noise = np.dot(y[mid], noise[mid]) / np.dot(noise[mid], noise[mid])
            kept_speech = np.dot(y[mid], speech[mid]) / np.dot(speech[mid], speech[mid])
            self.assertLess(abs(kept_noise), 0.05, res)  # the floor: -30 dB, 0.03 in amplitude
            self.assertGreater(kept_speech, 0.95, res)


class Spec(unittest.TestCase):
    def test_parses_to_an_absolute_path_and_a_tag_from_the_contents(self):
        with tempfile.TemporaryDirectory() as d:
            p = write(d, weights())
            self.assertEqual(speex.parse_frontend("gate:" + os.path.relpath(p)), "gate:" + os.path.abspath(p))
            self.assertRegex(speex.tag("gate:" + p), r"^-gate-[0-9a-f]{10}$")
            self.assertIsInstance(speex.make("gate:" + p), G.Gate)

    def test_bad_files_are_named(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaisesRegex(HotPhraseError, "no talker-gate weights file"):
                speex.parse_frontend("gate:" + os.path.join(d, "missing.npz"))
            with self.assertRaisesRegex(HotPhraseError, "want gate:WEIGHTS_NPZ"):
                speex.parse_frontend("gate:")
            w = weights()
            del w["w_hh"]
            with self.assertRaisesRegex(HotPhraseError, "no w_hh"):
                G.Gate(write(d, w, "short.npz"))
            w = weights()
            w["w_out"] = w["w_out"][:, :4]
            with self.assertRaisesRegex(HotPhraseError, "wrong shape"):
                G.Gate(write(d, w, "shape.npz"))
            w = weights()
            w["mean"] = np.zeros(G.NBINS, np.float32)  # a bins-sized input normalisation on a bands network
            with self.assertRaisesRegex(HotPhraseError, "wrong shape"):
                G.Gate(write(d, w, "mean.npz"))


@unittest.skipUnless(HAVE_TORCH and HAVE_STFT, "needs PyTorch and scipy 1.12 or later")
class Training(unittest.TestCase):
    def test_both_losses_learn_to_take_a_quieter_voice_out(self):
        from hotphrase import talker_gate_train as T
        sft = G.stft()
        rng = np.random.default_rng(7)
        sr = 16000

        def voice(f0, n):  # a buzz with syllables: on 0.2 s, off 0.15 s
            t = np.arange(n) / sr
            x = sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 12))
            on = ((t % 0.35) < 0.2) * 1.0
            return (x * on * 0.05).astype(np.float32)

        pairs = []
        for i in range(48):
            n = sr
            lead = voice(rng.uniform(100, 130), n)
            other = np.roll(voice(rng.uniform(200, 260), n), int(rng.integers(0, 5000))) * 0.2
            pairs.append(T.powers((lead + other, lead), sft))
        mix_p = np.stack([p[0] for p in pairs])
        voice_b = np.stack([p[1] for p in pairs])
        w = T.train(mix_p, voice_b, hidden=16, floor=0.03, under=2.0, epochs=25, seed=1, log=lambda s: None)
        self.check(w, voice, sft, sr)
        rest_b = np.stack([p[2] for p in pairs])
        # the mask's squared gain errors are small numbers: it takes more steps than the log powers
        wm = T.train(mix_p, voice_b, hidden=16, floor=0.03, under=1.0, epochs=100, seed=1, log=lambda s: None,
                     rest_b=rest_b, objective="mask")
        self.check(wm, voice, sft, sr)
        # the mask objective learns the ideal gate's gains, whatever they are: told that nothing is noise (the
        # rest's powers zero, so the ideal gain is one wherever the voice sounds, the floor where it is silent),
        # it keeps the quieter voice while the leading one sounds, which the log-power objective takes out
        # (measured: 0.44 of the quieter voice's power kept against 0.13)
        wk = T.train(mix_p, voice_b, hidden=16, floor=0.03, under=1.0, epochs=100, seed=1, log=lambda s: None,
                     rest_b=np.zeros_like(rest_b), objective="mask")
        self.assertGreater(self.kept(wk, voice, sft, sr)[0], 2 * self.kept(w, voice, sft, sr)[0])

    def check(self, w, voice, sft, sr):
        kept_other, kept_lead = self.kept(w, voice, sft, sr)
        # untrained, every gain is about the same (0.5 at the start: 0.26 of the power), so both keep the same
        # share; trained, the quieter voice keeps at most half the leading one's share, and the leading one more
        # than an untrained gate lets through (measured: 0.13 against 0.48 with the log-power loss, 0.36 against
        # 0.87 with the mask loss)
        self.assertLess(kept_other, 0.5 * kept_lead)
        self.assertGreater(kept_lead, 0.3)

    def kept(self, w, voice, sft, sr):
        """Through the gate these weights make: the power kept of a quieter voice and of the leading one."""
        with tempfile.TemporaryDirectory() as d:
            g = G.Gate(write(d, w))
        lead = voice(115, sr)
        other = np.roll(voice(230, sr), 2000) * 0.2
        spec_o = sft.stft(other)
        gains = g.bin_gains(sft.stft(lead + other))
        # power of the quieter voice kept against the leading one's, through the same gains
        spec_l = sft.stft(lead)
        kept_other = np.sum(np.abs(spec_o * gains) ** 2) / np.sum(np.abs(spec_o) ** 2)
        kept_lead = np.sum(np.abs(spec_l * gains) ** 2) / np.sum(np.abs(spec_l) ** 2)
        return kept_other, kept_lead


if __name__ == "__main__":
    unittest.main()
