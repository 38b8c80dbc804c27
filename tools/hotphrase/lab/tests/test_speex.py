"""The speexdsp noise-suppressing front end (speex.py) and how the household evaluation keys its caches by it:
noise taken down and speech-like bursts kept, frames run in order from each stream's start, a fresh state per
stream, a wrong library named clearly; caches made through another front end refused."""
import os
import tempfile
import unittest

import numpy as np

from hotphrase import frontend_registry as FR
from hotphrase.errors import HotPhraseError
from hotphraselab import speex

try:
    speex.load()
    HAVE_SPEEX = True
except HotPhraseError:
    HAVE_SPEEX = False

SR = 16000


def bursts(seconds=4.0, seed=0, noise_amp=0.05):
    """A 440 Hz tone switched on and off every 0.4 s after the first second (so that, like speech, it is not
    stationary: speexdsp's noise estimate learns a steady tone as noise), in white noise; int16, and its parts."""
    n = int(seconds * SR)
    t = np.arange(n) / SR
    on = ((t % 0.8) < 0.4) & (t > 1.0)
    tone = 0.2 * np.sin(2 * np.pi * 440 * t) * on
    noise = noise_amp * np.random.default_rng(seed).standard_normal(n)
    return np.round((tone + noise) * 32767).astype(np.int16), tone, noise


def band_powers(y, x, lo=SR * 2):
    """(tone band power kept, power kept outside it) of y against x, after the first 2 s (noise estimate settled)."""
    Y = np.fft.rfft(y[lo:].astype(np.float64))
    X = np.fft.rfft(x[lo:].astype(np.float64))
    f = np.fft.rfftfreq(len(y) - lo, 1 / SR)
    band = np.abs(f - 440) < 30
    return (np.sum(np.abs(Y[band]) ** 2) / np.sum(np.abs(X[band]) ** 2),
            np.sum(np.abs(Y[~band]) ** 2) / np.sum(np.abs(X[~band]) ** 2))


@unittest.skipUnless(HAVE_SPEEX, "libspeexdsp.so.1 not installed (Debian: libspeexdsp1)")
class Denoise(unittest.TestCase):
    def test_takes_the_noise_down_and_keeps_the_bursts(self):
        x, _, _ = bursts()
        y = speex.Denoiser()(x)
        tone_kept, rest_kept = band_powers(y, x)
        self.assertGreater(tone_kept, 0.8)
        self.assertLess(rest_kept, 0.25)  # most of the noise power is gone (-15 dB where nothing else is)

    def test_deeper_suppression_takes_more(self):
        x, _, _ = bursts(seed=3)
        _, rest15 = band_powers(speex.Denoiser(-15)(x), x)
        _, rest30 = band_powers(speex.Denoiser(-30)(x), x)
        self.assertLess(rest30, rest15)

    def test_noise_alone_loses_most_of_its_power(self):
        _, _, noise = bursts(seed=5)
        q = np.round(noise * 32767).astype(np.int16)
        y = speex.Denoiser()(q)
        self.assertLess(np.mean(y[SR:].astype(float) ** 2), 0.2 * np.mean(q[SR:].astype(float) ** 2))

    def test_frames_in_order_from_the_start(self):
        x, _, _ = bursts(seconds=3.0, seed=1)
        d = speex.Denoiser(frame=160)
        y = d(x)
        # causal, frame by frame from the start: a prefix of whole frames comes out as the whole stream's prefix
        n1 = 160 * 150
        np.testing.assert_array_equal(d(x[:n1]), y[:n1])
        # and the state carries over: the second half alone (a fresh state) differs from it inside the stream
        self.assertFalse(np.array_equal(d(x[n1:]), y[n1:]))
        # a fresh state per call: the same stream twice gives the same output
        np.testing.assert_array_equal(d(x), y)

    def test_twenty_ms_frames(self):
        x, _, _ = bursts(seed=2)
        y = speex.Denoiser(frame=320)(x)
        tone_kept, rest_kept = band_powers(y, x)
        self.assertGreater(tone_kept, 0.8)
        self.assertLess(rest_kept, 0.25)

    def test_length_kept_with_a_partial_last_frame(self):
        x, _, _ = bursts(seconds=1.0)
        x = x[:16000 - 37]
        y = speex.Denoiser()(x)
        self.assertEqual(len(y), len(x))
        self.assertEqual(y.dtype, np.int16)
        self.assertEqual(len(speex.Denoiser()(x[:0])), 0)

    def test_wants_int16_and_a_speaker_frame(self):
        with self.assertRaisesRegex(HotPhraseError, "int16"):
            speex.Denoiser()(np.zeros(320, np.float32))
        with self.assertRaisesRegex(HotPhraseError, "160 or 320"):
            speex.Denoiser(frame=256)
        with self.assertRaisesRegex(HotPhraseError, "attenuation"):
            speex.Denoiser(6)

    def test_float_renderings_round_trip(self):
        x, _, _ = bursts(seconds=2.0)
        f = x.astype(np.float32) / 32768
        np.testing.assert_array_equal(FR.apply_float(None, f), f)
        out = FR.apply_float(speex.Denoiser(), f)
        np.testing.assert_array_equal(np.round(out * 32768).astype(np.int16), speex.Denoiser()(x))


class Names(unittest.TestCase):
    def test_wrong_library_is_a_clear_error(self):
        with self.assertRaisesRegex(HotPhraseError, "libspeexdsp"):
            speex.Denoiser(library="libspeexdsp-not-here.so.9")

    def test_parse(self):
        self.assertIsNone(FR.parse_frontend("none"))
        self.assertEqual(FR.parse_frontend("speex-denoise"), "speex-denoise:-15")
        self.assertEqual(FR.parse_frontend("speex-denoise:-30"), "speex-denoise:-30")
        self.assertEqual(FR.tag("none"), "")
        self.assertEqual(FR.tag("speex-denoise"), "-speex-denoise-15")
        for bad in ("speex", "speex-denoise:x", "speex-denoise:5", "rnnoise"):
            with self.assertRaises(HotPhraseError):
                FR.parse_frontend(bad)


class ByRendering(unittest.TestCase):
    def test_misses_by_label(self):
        from hotphrase import household_eval as HE
        col = {"a": 0, "b": 1, "c": 2, "d": 3}
        pbest = np.array([[7.0, 1.0, 7.0, 1.0], [1.0, 7.0, 7.0, 7.0]])  # [enrollment, clip] best z
        meta = [{"own": ["a", "b", "c"]}, {"own": ["b", "d"]}]
        labels = {"a": "fan", "b": "babble", "c": "fan", "d": "babble"}
        out = HE.misses_by_label(pbest, meta, col, 5.9, labels)
        self.assertEqual(out, {"babble": {"own_missed_pct": 33.33, "own_clips": 3},
                               "fan": {"own_missed_pct": 0.0, "own_clips": 2}})

    def test_labels_read_in_sorted_name_order(self):
        from hotphrase import household_eval as HE
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.npz")
            np.savez(path, emb=np.zeros((2, 96)), offsets=np.array([0, 1, 2]), labels=np.array(["fan", "babble"]))
            self.assertEqual(HE.load_labels(path, ["z.wav", "a.wav"]), {"a.wav": "fan", "z.wav": "babble"})
            np.savez(path, emb=np.zeros((2, 96)), offsets=np.array([0, 1, 2]))
            self.assertIsNone(HE.load_labels(path, ["z.wav", "a.wav"]))


class CacheKeys(unittest.TestCase):
    """household_eval never reads embeddings made through another front end."""

    def write(self, d, name, **extra):
        path = os.path.join(d, name)
        np.savez(path, emb=np.zeros((6, 96), np.float16), offsets=np.array([0, 2, 6]), **extra)
        return path

    def test_streams_and_clips_keyed_by_front_end(self):
        from hotphrase import household_eval as HE
        with tempfile.TemporaryDirectory() as d:
            plain = self.write(d, "plain.npz")  # evaluate_format2's caches carry no front end: "none"
            den = self.write(d, "den.npz", frontend=np.array("speex-denoise:-15"))
            self.assertEqual(len(HE.load_streams([plain])), 2)
            self.assertEqual(len(HE.load_streams([den], "speex-denoise:-15")), 2)
            with self.assertRaisesRegex(HotPhraseError, "front end"):
                HE.load_streams([plain], "speex-denoise:-15")
            with self.assertRaisesRegex(HotPhraseError, "front end"):
                HE.load_streams([den])
            with self.assertRaisesRegex(HotPhraseError, "front end"):
                HE.load_streams([den], "speex-denoise:-30")
            self.assertEqual(sorted(HE.load_clips_npz(den, ["b.wav", "a.wav"], "speex-denoise:-15")),
                             ["a.wav", "b.wav"])
            with self.assertRaisesRegex(HotPhraseError, "front end"):
                HE.load_clips_npz(plain, ["b.wav", "a.wav"], "speex-denoise:-15")
            # the ideal gate's renderings (household_conditions --oracle) stand beside those without a front end,
            # and only there
            ideal = self.write(d, "ideal.npz", frontend=np.array("oracle-bins"))
            self.assertEqual(len(HE.load_clips_npz(ideal, ["b.wav", "a.wav"])), 2)
            with self.assertRaisesRegex(HotPhraseError, "front end"):
                HE.load_clips_npz(ideal, ["b.wav", "a.wav"], "speex-denoise:-15")

    @unittest.skipUnless(HAVE_SPEEX, "libspeexdsp.so.1 not installed")
    def test_conditions_stamp_what_they_ran(self):
        from hotphrase import household_conditions as HC
        x, _, _ = bursts(seconds=2.0)
        f = [x.astype(np.float32) / 32768]
        same, meta = HC.stamped(f, "none")
        np.testing.assert_array_equal(same[0], f[0])
        self.assertEqual(str(meta["frontend"]), "none")
        den, meta = HC.stamped(f, "speex-denoise")
        self.assertEqual(str(meta["frontend"]), "speex-denoise:-15")
        self.assertLess(np.mean(den[0][:SR] ** 2), 0.5 * np.mean(f[0][:SR] ** 2))  # the noise-only second


if __name__ == "__main__":
    unittest.main()
