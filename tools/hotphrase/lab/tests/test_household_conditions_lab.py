"""The lab's household_conditions (hotphraselab.household_conditions): the ideal gate's early part and where it is
kept, a front end's warm-up, and a gate enrolled on the speaker's voice (with scipy, skipped without it)."""
import contextlib
import importlib.util
import io
import unittest

import numpy as np

from hotphrase import augment as A
from hotphrase import frontend_registry as FR
from hotphrase import household_conditions as HC
from hotphraselab import household_conditions as LC
from hotphrase.testing import FakeBanks, tone


NEEDS_STFT = unittest.skipUnless(importlib.util.find_spec("scipy")
                                 and hasattr(importlib.import_module("scipy.signal"), "ShortTimeFFT"),
                                 "needs scipy 1.12 or later (ShortTimeFFT)")


@unittest.skipUnless(importlib.util.find_spec("scipy"), "needs scipy (its FFT convolution)")
class Room(unittest.TestCase):
    def test_the_early_part_and_the_late_tail_make_the_rendering(self):
        x = tone(4000)
        h = np.zeros(2000, np.float32)
        h[100] = 1.0  # the direct path
        h[100 + 160] = 0.4  # 10 ms after it: early
        h[100 + 1600] = 0.3  # 100 ms after it: late
        whole = HC.reverberant(x, h, 100)
        early = LC.early_part(x, h, 100, 50)
        late = whole - early
        self.assertEqual(len(early), len(whole))
        # the late part is the 100 ms reflection alone, at the rendering's gain
        gain = np.sqrt(A.active_power(x) / A.active_power(HC._through(x, h, 100)))
        want = np.zeros(len(whole))
        want[1600:1600 + len(x)] = 0.3 * gain * x
        np.testing.assert_allclose(late, want, atol=1e-5)
        self.assertTrue(np.abs(early[:4000] - gain * (x + 0.4 * np.pad(x, (160, 0))[:4000])).max() < 1e-5)

    @NEEDS_STFT
    def test_the_early_oracle_takes_a_late_tail_out_of_a_room_without_noise(self):
        rooms = [({"key": "r1", "direct_path_samples": 0},
                  np.concatenate([[1.0], np.zeros(3199), [0.8]]).astype(np.float32))]  # an echo 200 ms later
        rng = np.random.default_rng(4)
        clips = [np.concatenate([rng.standard_normal(2400) * 0.1, np.zeros(6000)]).astype(np.float32)]
        (plain,), _ = LC.condition_audio("w", "room", clips, FakeBanks(), rooms)
        (gated,), _ = LC.condition_audio("w", "room", clips, FakeBanks(), rooms, oracle="bands", early_ms=50)
        echo = slice(HC.LEAD + 3200 + 480, HC.LEAD + 3200 + 2400 - 480)  # the echo alone, past the burst
        burst = slice(HC.LEAD + 480, HC.LEAD + 2400 - 480)
        self.assertLess(np.sum(gated[echo] ** 2), 0.01 * np.sum(plain[echo] ** 2))  # the floor: -30 dB
        self.assertGreater(np.sum(gated[burst] ** 2), 0.9 * np.sum(plain[burst] ** 2))


    @NEEDS_STFT
    def test_the_oracle_where_asked_the_rendering_elsewhere(self):
        clips = [tone(6000, seed=i) for i in range(2)]
        plain, _ = LC.condition_audio("w", "snr10", clips, FakeBanks(), [])
        every, _ = LC.condition_audio("w", "snr10", clips, FakeBanks(), [], oracle="bands")
        lead, _ = LC.condition_audio("w", "snr10", clips, FakeBanks(), [], oracle="bands", where="lead")
        word, _ = LC.condition_audio("w", "snr10", clips, FakeBanks(), [], oracle="bands", where="keyword")
        for p, e, ld, k in zip(plain, every, lead, word):
            np.testing.assert_array_equal(ld[:HC.LEAD], e[:HC.LEAD])
            np.testing.assert_array_equal(ld[HC.LEAD:], p[HC.LEAD:])
            np.testing.assert_array_equal(k[:HC.LEAD], p[:HC.LEAD])
            np.testing.assert_array_equal(k[HC.LEAD:], e[HC.LEAD:])
            self.assertLess(np.sum(e[:HC.LEAD] ** 2), 0.01 * np.sum(p[:HC.LEAD] ** 2))  # noise alone: the floor


class WarmUp(unittest.TestCase):
    class Ramp:
        """One noise family whose samples count up: a warm-up's continuity shows as one steady step."""
        kinds = ["ramp"]
        b = {"ramp": (np.arange(400000) / 400000).astype(np.float32), "fan": np.zeros(1000, np.float32)}

    def test_the_renderings_are_the_same_and_the_warm_up_runs_on_into_them(self):
        clips = [tone(3000, seed=i) for i in range(3)]
        plain, _ = LC.condition_audio("w", "snr10", clips, self.Ramp(), [])
        warm = []
        same, _ = LC.condition_audio("w", "snr10", clips, self.Ramp(), [], warm_s=0.2, warm=warm)
        self.assertEqual(len(warm), 3)
        for p, q, w in zip(plain, same, warm):
            np.testing.assert_array_equal(p, q)
            self.assertEqual(len(w), 3200)
            run = np.concatenate([w, p[:HC.LEAD]])  # the lead is the noise alone
            step = np.diff(run.astype(np.float64))
            # one ramp, scaled once, across the join (float32 rounding of the ramp's values: a few % of a step)
            np.testing.assert_allclose(step, np.median(step), rtol=0.1)

    def test_without_noise_there_is_no_warm_up(self):
        warm = []
        LC.condition_audio("w", "room", [tone(3000)], FakeBanks(), [({"key": "r", "direct_path_samples": 0},
                                                                      np.array([1.0], np.float32))],
                           warm_s=1.0, warm=warm)
        self.assertEqual(warm, [None])

    @NEEDS_STFT
    def test_the_front_end_hears_the_warm_up_first(self):
        import os
        import tempfile
        from hotphraselab import talker_gate as G
        x = tone(6000)
        w = np.random.default_rng(5).standard_normal(8000).astype(np.float32) * 0.3
        rng, h, n = np.random.default_rng(3), 8, G.RESOLUTIONS["bands"]
        weights = {"mean": np.zeros(n) - 12, "std": np.ones(n) * 3, "w_ih": rng.normal(0, 1, (3 * h, n)),
                   "w_hh": rng.normal(0, 1, (3 * h, h)), "b_ih": np.zeros(3 * h), "b_hh": np.zeros(3 * h),
                   "w_out": rng.normal(0, 1, (n, h)), "b_out": np.zeros(n), "floor": 0.03}
        with tempfile.TemporaryDirectory() as d:
            np.savez(os.path.join(d, "g.npz"), **{k: np.asarray(v, np.float32) for k, v in weights.items()})
            spec = "gate:" + os.path.join(d, "g.npz")
            (cold,), _ = LC.stamped([x], spec)
            (warmed,), fe = LC.stamped([x], spec, [w])
            want = FR.apply_float(FR.make(spec), np.concatenate([w, x]))[len(w):]
            (none,), _ = LC.stamped([x], spec, [None])
            self.assertEqual(str(fe["frontend"]), FR.parse_frontend(spec))
            self.assertIsInstance(FR.make(spec), G.Gate)
        np.testing.assert_array_equal(warmed, want)
        np.testing.assert_array_equal(none, cold)
        self.assertGreater(np.abs(warmed - cold).max(), 1e-4)  # the gate's state carried over


    @NEEDS_STFT
    def test_a_conditioned_gate_is_enrolled_per_rendering_and_refused_without_speakers(self):
        import os
        import tempfile
        x = tone(6000)
        rng, h, n, dim = np.random.default_rng(3), 8, 40, 4
        weights = {"mean": np.zeros(n) - 12, "std": np.ones(n) * 3, "w_ih": rng.normal(0, 1, (3 * h, n + dim)),
                   "w_hh": rng.normal(0, 1, (3 * h, h)), "b_ih": np.zeros(3 * h), "b_hh": np.zeros(3 * h),
                   "w_out": rng.normal(0, 1, (n, h)), "b_out": np.zeros(n), "floor": 0.03,
                   "spk_w": rng.normal(0, 1, (dim, n)), "spk_b": np.zeros(dim)}
        t = np.arange(16000) / 16000
        low = (0.3 * np.sin(2 * np.pi * 150 * t)).astype(np.float32)
        high = (0.3 * np.sin(2 * np.pi * 3000 * t)).astype(np.float32)
        with tempfile.TemporaryDirectory() as d:
            np.savez(os.path.join(d, "g.npz"), **{k: np.asarray(v, np.float32) for k, v in weights.items()})
            spec = "gate:" + os.path.join(d, "g.npz")
            (a, b, c), fe = LC.stamped([x, x, x], spec, enrol=[low, high, low])
            self.assertEqual(str(fe["frontend"]), FR.parse_frontend(spec))
            self.assertIn("enrollment_sets", str(fe["enrolled_on"]))
            g = FR.make(spec)
            g.enrol(high)
            np.testing.assert_array_equal(b, FR.apply_float(g, x))  # each rendering through its own voice
            np.testing.assert_array_equal(a, c)
            self.assertGreater(np.abs(a - b).max(), 1e-4)
            for argv in (["--frontend", spec], ["--enrol-from", "x.json"]):  # a conditioned gate alone; no gate
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    self.assertEqual(LC.main(["/nonexistent", d, "--words", "jarvis"] + argv), 1)
                self.assertIn("--enrol-from: is for a gate conditioned on a voice", err.getvalue())


if __name__ == "__main__":
    unittest.main()
