"""The WPE dereverberating front end (wpe.py): its name parses and keys caches, it keeps the length and the int16
contract, cuts a long stream into blocks with a short last piece joined to the block before it, and, with nara_wpe
installed, brings a signal through a room closer to what the room's first 50 ms alone would give."""
import unittest
from unittest import mock

import numpy as np

from hotphrase import frontend_registry as FR
from hotphrase.errors import HotPhraseError
from hotphraselab import wpe

SR = 16000
try:
    import nara_wpe  # noqa: F401
    HAVE_NARA = True
except ImportError:
    HAVE_NARA = False


class Name(unittest.TestCase):
    def test_parse_and_tag(self):
        self.assertEqual(FR.parse_frontend("wpe"), "wpe")
        self.assertEqual(FR.tag("wpe"), "-wpe")
        for bad in ("wpe:10", "wpe:", "wpe10"):
            with self.assertRaises(HotPhraseError, msg=bad):
                FR.parse_frontend(bad)

    def test_make_gives_the_dereverberator(self):
        self.assertIsInstance(FR.make("wpe"), wpe.Dereverb)


class Blocks(unittest.TestCase):
    """The block cut, with the WPE itself replaced by a recorder (nara_wpe is not needed here)."""

    def run_lengths(self, n, block_seconds=1.0):
        seen = []

        def record(x, *args):
            seen.append(len(x))
            return np.asarray(x) * 0.5  # a change the output must show

        x = np.full(n, 1000, np.int16)
        with mock.patch.object(wpe, "dereverb_float", record):
            y = wpe.Dereverb(block_seconds)(x)
        self.assertEqual(len(y), n)
        self.assertTrue(np.all(y == 500), "every sample went through a block")
        return seen

    def test_one_block_for_a_rendering(self):
        self.assertEqual(self.run_lengths(SR // 2 + 7), [SR // 2 + 7])

    def test_a_long_stream_is_cut_into_blocks(self):
        self.assertEqual(self.run_lengths(3 * SR + SR // 2 + 1), [SR, SR, SR, SR // 2 + 1])  # over half: its own
        self.assertEqual(self.run_lengths(3 * SR + SR // 4), [SR, SR, SR + SR // 4])  # under half: joins
        self.assertEqual(self.run_lengths(3 * SR), [SR, SR, SR])

    def test_contract(self):
        self.assertEqual(len(wpe.Dereverb()(np.zeros(0, np.int16))), 0)
        with self.assertRaises(HotPhraseError):
            wpe.Dereverb()(np.zeros(100, np.float32))
        with self.assertRaises(HotPhraseError):
            wpe.Dereverb(0.01)
        with self.assertRaises(HotPhraseError):
            wpe.Dereverb(0)


def room(seconds=0.6, seed=0):
    """An impulse response: a direct path, then an exponentially decaying noise tail (RT60 `seconds`)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    h = 0.3 * rng.standard_normal(len(t)) * np.exp(-t * 6.9 / seconds)
    h[0] = 1.0
    return h


def log_spec(x):
    frames = np.lib.stride_tricks.sliding_window_view(x, 400)[::160] * np.hanning(400)
    return np.log(np.abs(np.fft.rfft(frames, axis=1)) ** 2 + 1e-8)


@unittest.skipUnless(HAVE_NARA, "nara_wpe not installed (pip install nara_wpe==0.0.11)")
class Dereverberates(unittest.TestCase):
    def test_closer_to_the_early_part(self):
        rng = np.random.default_rng(4)
        # A speech-like source: bursts of a slowly varying harmonic tone, 150 ms on and 100 ms off.
        n = 3 * SR
        t = np.arange(n) / SR
        f0 = 140 + 30 * np.sin(2 * np.pi * 0.7 * t)
        src = sum(np.sin(2 * np.pi * k * np.cumsum(f0) / SR) / k for k in range(1, 12))
        src *= ((t % 0.25) < 0.15) * (0.5 + 0.5 * rng.random()) * 0.05
        h = room()
        reverberant = np.convolve(src, h)[:n]
        early = np.convolve(src, h[:int(0.05 * SR)])[:n]
        q = np.clip(np.round(reverberant * 32768), -32768, 32767).astype(np.int16)
        out = wpe.Dereverb()(q).astype(np.float64) / 32768
        self.assertEqual(len(out), n)
        E = log_spec(early)
        loud = E > E.max() - np.log(1e5)  # the early part's bins within 50 dB of its loudest
        before = np.abs(log_spec(reverberant) - E)[loud].mean()
        after = np.abs(log_spec(out) - E)[loud].mean()
        self.assertLess(after, 0.9 * before, f"log-spectral distance to the early part {before:.3f} -> {after:.3f}")

    def test_deterministic(self):
        x = np.round(np.random.default_rng(2).standard_normal(SR) * 3000).astype(np.int16)
        np.testing.assert_array_equal(wpe.Dereverb()(x), wpe.Dereverb()(x))


if __name__ == "__main__":
    unittest.main()
