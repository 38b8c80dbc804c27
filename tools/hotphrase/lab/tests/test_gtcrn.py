"""The GTCRN front end (gtcrn.py): the STFT analysis and synthesis give the samples back when nothing changes the
spectra, the front end's spec parses and names a missing model clearly, and, with the model (GTCRN_ONNX = the path
of GTCRN's streaming export, e.g. its stream/onnx_models/gtcrn_simple.onnx) and onnxruntime, the enhancer keeps the
length, is deterministic, runs each call from fresh caches, and takes noise down while keeping a voiced burst."""
import os
import tempfile
import unittest

import numpy as np

from hotphrase import frontend_registry as FR
from hotphrase.errors import HotPhraseError
from hotphraselab import gtcrn

SR = 16000
MODEL = os.environ.get("GTCRN_ONNX", "")
try:
    import onnxruntime  # noqa: F401
    HAVE_ORT = True
except ImportError:
    HAVE_ORT = False
try:  # the talker gate's STFT (scipy 1.12 or later), for the ideal gate's share
    from scipy.signal import ShortTimeFFT  # noqa: F401
    HAVE_STFT = True
except ImportError:
    HAVE_STFT = False


class Stft(unittest.TestCase):
    def test_unit_mask_round_trip(self):
        rng = np.random.default_rng(0)
        for n in (1, 255, 256, 257, 511, 512, 16000, 16001):
            x = rng.uniform(-0.9, 0.9, n).astype(np.float32)
            spec = gtcrn.analyse(x)
            self.assertEqual(spec.shape, (gtcrn.n_frames(n), gtcrn.NFFT // 2 + 1))
            np.testing.assert_allclose(gtcrn.synthesise(spec, n), x, atol=1e-5, err_msg=f"n={n}")

    def test_a_changed_spectrum_changes_the_samples(self):
        x = np.random.default_rng(1).uniform(-0.5, 0.5, 4000).astype(np.float32)
        spec = gtcrn.analyse(x)
        spec[:, 100:] = 0  # a low-pass mask: the round trip must not simply hand x back
        y = gtcrn.synthesise(spec, len(x))
        self.assertLess(np.mean(y ** 2), 0.6 * np.mean(x ** 2))

    def test_squared_window_sums_to_one_at_the_hop(self):
        w2 = gtcrn.WINDOW ** 2
        np.testing.assert_allclose(w2[:gtcrn.HOP] + w2[gtcrn.HOP:], 1.0, atol=1e-6)

    def test_frames_are_causal(self):
        # the spectra of a prefix are the whole stream's first frames, except the last one (zero padded)
        x = np.random.default_rng(2).uniform(-0.5, 0.5, 5000).astype(np.float32)
        whole = gtcrn.analyse(x)
        part = gtcrn.analyse(x[:2560])
        np.testing.assert_allclose(part[:-1], whole[:len(part) - 1], atol=1e-5)


class Spec(unittest.TestCase):
    def test_parses_to_an_absolute_path(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.onnx")
            with open(p, "wb") as f:
                f.write(b"not a model")
            rel = os.path.relpath(p)
            self.assertEqual(FR.parse_frontend("gtcrn:" + rel), "gtcrn:" + os.path.abspath(p))
            t = FR.tag("gtcrn:" + p)
            self.assertRegex(t, r"^-gtcrn-[0-9a-f]{10}$")
            with open(p, "wb") as f:
                f.write(b"another model")
            self.assertNotEqual(FR.tag("gtcrn:" + p), t)  # the cache name follows the contents

    def test_missing_file_is_a_clear_error(self):
        with self.assertRaisesRegex(HotPhraseError, "no GTCRN model file"):
            FR.parse_frontend("gtcrn:/nonexistent/gtcrn.onnx")
        with self.assertRaisesRegex(HotPhraseError, "gtcrn:ONNX_PATH"):
            FR.parse_frontend("gtcrn")
        with self.assertRaisesRegex(HotPhraseError, "no GTCRN model file"):
            gtcrn.load_session("/nonexistent/gtcrn.onnx")

    def test_other_names_still_parse(self):
        self.assertIsNone(FR.parse_frontend("none"))
        self.assertEqual(FR.parse_frontend("speex-denoise"), "speex-denoise:-15")
        with self.assertRaisesRegex(HotPhraseError, "gtcrn:ONNX_PATH"):
            FR.parse_frontend("rnnoise")


class Kept(unittest.TestCase):
    """gtcrn_kept.kept: the enhancer's gain on the mixture, applied to each part alone."""

    class Gain:
        """A stand-in enhancer: multiplies bins below `cut` by `low` and the rest by `high`."""
        def __init__(self, low, high, cut=64):
            self.low, self.high, self.cut = low, high, cut

        def spectra(self, spec):
            out = spec * self.high
            out[:, :self.cut] = spec[:, :self.cut] * self.low
            return out

    def parts(self):
        rng = np.random.default_rng(4)
        t = np.arange(8000) / SR
        s = (0.3 * np.sin(2 * np.pi * 500 * t)).astype(np.float32)  # bin 16 of 257: below the cut
        n = np.fft.irfft(np.fft.rfft(rng.standard_normal(8000)) * (np.fft.rfftfreq(8000, 1 / SR) > 4000), 8000)
        return s, (0.1 * n).astype(np.float32), slice(1000, 7000)  # noise above 4 kHz only: above the cut

    def test_unit_gain_keeps_everything(self):
        from hotphraselab import gtcrn_kept
        s, n, span = self.parts()
        k, nk, before, after, lead = gtcrn_kept.kept(self.Gain(1.0, 1.0), s, n, span)
        self.assertAlmostEqual(k, 0.0, places=3)
        self.assertAlmostEqual(nk, 0.0, places=3)
        self.assertAlmostEqual(lead, 0.0, places=3)
        self.assertAlmostEqual(before, after, places=3)

    def test_each_part_gets_its_own_bins_gain(self):
        from hotphraselab import gtcrn_kept
        s, n, span = self.parts()
        k, nk, before, after, lead = gtcrn_kept.kept(self.Gain(0.5, 0.1), s, n, span)
        self.assertAlmostEqual(k, 20 * np.log10(0.5), delta=0.1)  # the tone: the low bins' gain
        self.assertAlmostEqual(nk, 20 * np.log10(0.1), delta=0.1)  # the noise: the high bins'
        self.assertAlmostEqual(lead, 20 * np.log10(0.1), delta=0.1)  # the noise alone before the span
        self.assertAlmostEqual(after - before, 20 * np.log10(5), delta=0.2)

    @unittest.skipUnless(HAVE_STFT, "needs scipy 1.12 or later (ShortTimeFFT)")
    def test_the_ideal_gate_keeps_the_tone_and_takes_the_noise_out(self):
        from hotphraselab import gtcrn_kept
        s, n, span = self.parts()
        s = s.copy()
        s[:span.start] = 0  # nothing but the noise in the lead
        for res in ("bands", "bins"):
            k, nk, before, after, lead = gtcrn_kept.oracle_kept(res, s, n, span)
            self.assertGreater(k, -1.0, res)  # the tone's bands are the tone's
            self.assertLess(lead, -25.0, res)  # the lead is noise alone: down to the -30 dB floor
            self.assertGreater(after - before, 20.0, res)


def voiced_in_noise(seconds=4.0, seed=0):
    """A harmonic 150 Hz buzz switched on and off every 0.5 s after the first second, in white noise: (int16 mix,
    buzz alone as float)."""
    n = int(seconds * SR)
    t = np.arange(n) / SR
    on = ((t % 1.0) < 0.5) & (t > 1.0)
    buzz = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 20)) * 0.1 * on
    noise = 0.03 * np.random.default_rng(seed).standard_normal(n)
    return np.round(np.clip(buzz + noise, -1, 1) * 32767).astype(np.int16), buzz


@unittest.skipUnless(MODEL and HAVE_ORT, "set GTCRN_ONNX to GTCRN's streaming ONNX export (and install onnxruntime)")
class WithModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.enh = FR.make("gtcrn:" + MODEL)

    def test_length_and_determinism(self):
        x, _ = voiced_in_noise(seconds=2.3)
        y = self.enh(x)
        self.assertEqual(y.dtype, np.int16)
        self.assertEqual(len(y), len(x))
        np.testing.assert_array_equal(self.enh(x), y)  # fresh caches per call
        self.assertEqual(len(self.enh(x[:0])), 0)
        self.assertEqual(len(self.enh(x[:100])), 100)

    def test_state_carries_within_a_stream(self):
        x, _ = voiced_in_noise(seed=1)
        y = self.enh(x)
        half = len(x) // 2
        self.assertFalse(np.array_equal(self.enh(x[half:]), y[half:]))

    def test_noise_down_buzz_kept(self):
        x, buzz = voiced_in_noise(seed=2)
        y = self.enh(x).astype(np.float64) / 32768
        xf = x.astype(np.float64) / 32768
        off = np.abs(buzz) == 0
        off[:SR] = False  # the first second: the model's recurrent state still settling
        on = ~off
        on[:SR] = False
        self.assertLess(np.mean(y[off] ** 2), 0.2 * np.mean(xf[off] ** 2))  # noise alone: most power gone
        self.assertGreater(np.mean(y[on] ** 2), 0.3 * np.mean(buzz[on] ** 2))  # the buzz: much of it kept

    def test_rejects_float_samples(self):
        with self.assertRaises(HotPhraseError):
            self.enh(np.zeros(320, np.float32))


if __name__ == "__main__":
    unittest.main()
