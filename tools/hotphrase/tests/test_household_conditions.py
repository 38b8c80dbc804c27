"""household_conditions' renderings of the real clips: the clean set's layout, the SNR over the clip's active
power, the room's alignment and level (with scipy, skipped without it), the condition names and the drawing."""
import contextlib
import importlib.util
import io
import unittest

import numpy as np

from hotphrase import augment as A
from hotphrase import household_conditions as HC


NEEDS_STFT = unittest.skipUnless(importlib.util.find_spec("scipy")
                                 and hasattr(importlib.import_module("scipy.signal"), "ShortTimeFFT"),
                                 "needs scipy 1.12 or later (ShortTimeFFT)")


def tone(n, amp=0.2, seed=0):
    rng = np.random.default_rng(seed)
    return (amp * np.sin(np.arange(n) * 0.05) + 0.001 * rng.standard_normal(n)).astype(np.float32)


class Render(unittest.TestCase):
    def test_clean_layout(self):
        x = tone(8000)
        lead = np.full(HC.LEAD, 0.01, np.float32)
        out = HC.render(x, HC.TAIL, lead=lead)
        self.assertEqual(len(out), HC.LEAD + 8000 + HC.TAIL)
        np.testing.assert_array_equal(out[:HC.LEAD], lead)
        np.testing.assert_array_equal(out[HC.LEAD:HC.LEAD + 8000], x)
        self.assertFalse(out[HC.LEAD + 8000:].any())

    def test_snr_over_the_clip(self):
        x = tone(16000)
        noise = np.random.default_rng(1).standard_normal(HC.LEAD + 16000 + HC.TAIL).astype(np.float32)
        for snr in (0.0, 5.0, 10.0):
            out = HC.render(x, HC.TAIL, noise=noise, snr=snr)
            added = out - np.concatenate([np.zeros(HC.LEAD), x, np.zeros(HC.TAIL)])
            got = 10 * np.log10(A.active_power(x) / np.mean(added ** 2))
            self.assertAlmostEqual(got, snr, places=2)
            self.assertTrue(added[:HC.LEAD].any())  # the noise runs over the lead too

    def test_clipped_to_int16_range(self):
        out = HC.render(np.full(100, 2.0, np.float32), 0, lead=np.zeros(HC.LEAD, np.float32))
        self.assertLessEqual(out.max(), 32767 / 32768)


@unittest.skipUnless(importlib.util.find_spec("scipy"), "needs scipy (its FFT convolution)")
class Room(unittest.TestCase):
    def test_aligned_on_the_direct_path_and_at_the_dry_level(self):
        x = tone(4000)
        h = np.zeros(300, np.float32)
        h[120] = 0.05  # a direct path alone, far quieter than the dry clip
        y = HC.reverberant(x, h, 120)
        self.assertEqual(len(y), 4000 + HC.TAIL)
        np.testing.assert_allclose(y[:4000], x, rtol=1e-4, atol=1e-6)
        self.assertAlmostEqual(A.active_power(y), A.active_power(x), places=6)

    def test_the_tail_rings_on(self):
        x = tone(4000)
        h = np.zeros(2000, np.float32)
        h[0] = 1.0
        h[1500] = 0.5  # a late reflection reaches past the clip's end
        y = HC.reverberant(x, h, 0)
        self.assertTrue(np.abs(y[4000:4000 + 1500]).max() > 0.01)


    def test_the_early_part_and_the_late_tail_make_the_rendering(self):
        x = tone(4000)
        h = np.zeros(2000, np.float32)
        h[100] = 1.0  # the direct path
        h[100 + 160] = 0.4  # 10 ms after it: early
        h[100 + 1600] = 0.3  # 100 ms after it: late
        whole = HC.reverberant(x, h, 100)
        early = HC.early_part(x, h, 100, 50)
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
        (plain,), _ = HC.condition_audio("w", "room", clips, FakeBanks(), rooms)
        (gated,), _ = HC.condition_audio("w", "room", clips, FakeBanks(), rooms, oracle="bands", early_ms=50)
        echo = slice(HC.LEAD + 3200 + 480, HC.LEAD + 3200 + 2400 - 480)  # the echo alone, past the burst
        burst = slice(HC.LEAD + 480, HC.LEAD + 2400 - 480)
        self.assertLess(np.sum(gated[echo] ** 2), 0.01 * np.sum(plain[echo] ** 2))  # the floor: -30 dB
        self.assertGreater(np.sum(gated[burst] ** 2), 0.9 * np.sum(plain[burst] ** 2))


    @NEEDS_STFT
    def test_the_oracle_where_asked_the_rendering_elsewhere(self):
        clips = [tone(6000, seed=i) for i in range(2)]
        plain, _ = HC.condition_audio("w", "snr10", clips, FakeBanks(), [])
        every, _ = HC.condition_audio("w", "snr10", clips, FakeBanks(), [], oracle="bands")
        lead, _ = HC.condition_audio("w", "snr10", clips, FakeBanks(), [], oracle="bands", where="lead")
        word, _ = HC.condition_audio("w", "snr10", clips, FakeBanks(), [], oracle="bands", where="keyword")
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
        plain, _ = HC.condition_audio("w", "snr10", clips, self.Ramp(), [])
        warm = []
        same, _ = HC.condition_audio("w", "snr10", clips, self.Ramp(), [], warm_s=0.2, warm=warm)
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
        HC.condition_audio("w", "room", [tone(3000)], FakeBanks(), [({"key": "r", "direct_path_samples": 0},
                                                                      np.array([1.0], np.float32))],
                           warm_s=1.0, warm=warm)
        self.assertEqual(warm, [None])

    @NEEDS_STFT
    def test_the_front_end_hears_the_warm_up_first(self):
        import os
        import tempfile
        from hotphraselab import speex
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
            (cold,), _ = HC.stamped([x], spec)
            (warmed,), fe = HC.stamped([x], spec, [w])
            want = speex.apply_float(speex.make(spec), np.concatenate([w, x]))[len(w):]
            (none,), _ = HC.stamped([x], spec, [None])
            self.assertEqual(str(fe["frontend"]), speex.parse_frontend(spec))
            self.assertIsInstance(speex.make(spec), G.Gate)
        np.testing.assert_array_equal(warmed, want)
        np.testing.assert_array_equal(none, cold)
        self.assertGreater(np.abs(warmed - cold).max(), 1e-4)  # the gate's state carried over


    @NEEDS_STFT
    def test_a_conditioned_gate_is_enrolled_per_rendering_and_refused_without_speakers(self):
        import os
        import tempfile
        from hotphraselab import speex
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
            (a, b, c), fe = HC.stamped([x, x, x], spec, enrol=[low, high, low])
            self.assertEqual(str(fe["frontend"]), speex.parse_frontend(spec))
            self.assertIn("enrollment_sets", str(fe["enrolled_on"]))
            g = speex.make(spec)
            g.enrol(high)
            np.testing.assert_array_equal(b, speex.apply_float(g, x))  # each rendering through its own voice
            np.testing.assert_array_equal(a, c)
            self.assertGreater(np.abs(a - b).max(), 1e-4)
            for argv in (["--frontend", spec], ["--enrol-from", "x.json"]):  # a conditioned gate alone; no gate
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    self.assertEqual(HC.main(["/nonexistent", d, "--words", "jarvis"] + argv), 1)
                self.assertIn("--enrol-from: is for a gate conditioned on a voice", err.getvalue())


class Conditions(unittest.TestCase):
    def test_names(self):
        self.assertEqual(HC.conditions([0, 5, 10], [], [10]), ["snr0", "snr5", "snr10"])
        self.assertEqual(HC.conditions([10], [], [10], clean=True), ["clean", "snr10"])
        self.assertEqual(HC.conditions([10], ["r"], [10]), ["snr10", "room", "room-snr10"])

    def test_drawn_in_turn_and_repeatable(self):
        class Banks:
            kinds = ["fan", "street"]
            b = {"fan": np.random.default_rng(2).standard_normal(80000).astype(np.float32),
                 "street": np.random.default_rng(3).standard_normal(80000).astype(np.float32)}
        rooms = [({"key": "r1", "direct_path_samples": 0}, np.array([1.0], np.float32)),
                 ({"key": "r2", "direct_path_samples": 1}, np.array([0.0, 1.0], np.float32))]
        clips = [tone(3000, seed=i) for i in range(5)]
        if not importlib.util.find_spec("scipy"):
            self.skipTest("needs scipy (its FFT convolution)")
        a, used = HC.condition_audio("w", "room-snr10", clips, Banks, rooms)
        self.assertEqual(used, {"r1": 3, "r2": 2, "fan": 3, "street": 2})
        b, _ = HC.condition_audio("w", "room-snr10", clips, Banks, rooms)
        for p, q in zip(a, b):
            np.testing.assert_array_equal(p, q)
        c, used = HC.condition_audio("w", "snr5", clips, Banks, [])
        self.assertEqual(used, {"fan": 3, "street": 2})
        self.assertEqual([len(x) for x in c], [HC.LEAD + 3000 + HC.TAIL] * 5)
        # the labels saved beside the embeddings name what each clip drew, in the same turn
        labels = HC.clip_labels("room-snr10", 5, Banks.kinds, rooms)
        self.assertEqual(labels, ["r1+fan", "r2+street", "r1+fan", "r2+street", "r1+fan"])
        self.assertEqual(HC.clip_labels("snr5", 3, ["fan", "street", "babble"], []), ["fan", "street", "babble"])
        self.assertEqual(HC.clip_labels("room", 3, Banks.kinds, rooms), ["r1", "r2", "r1"])
        self.assertEqual(HC.clip_labels("clean", 2, Banks.kinds, rooms), ["clean", "clean"])


class FakeBanks:
    """dataset.Banks' interface: two noise families of seeded Gaussian noise."""
    kinds = ["fan", "street"]
    b = {"fan": np.random.default_rng(2).standard_normal(80000).astype(np.float32),
         "street": np.random.default_rng(3).standard_normal(80000).astype(np.float32)}

    def noise(self, rng, n):
        return A.crop(rng, self.b[self.kinds[rng.integers(len(self.kinds))]], n)


@unittest.skipUnless(importlib.util.find_spec("scipy"), "needs scipy (dataset's augmentations)")
class TestSide(unittest.TestCase):
    def test_pieces_are_the_stream(self):
        from hotphrase import dataset as D
        clips = [tone(2000 + 500 * i, seed=i) for i in range(6)]
        want = D.stream(np.random.default_rng(5), clips, FakeBanks(), 0, quiet=(1.0, (35, 50)))[0]
        got = HC.stream_pieces(np.random.default_rng(5), clips, FakeBanks(), (1.0, (35, 50)))
        self.assertEqual(len(got), 6)
        np.testing.assert_array_equal(np.concatenate(got), want)

    def test_each_piece_at_its_own_snr(self):
        loud, quiet = tone(16000, amp=0.5), tone(16000, amp=0.005, seed=1)
        rng = np.random.default_rng(0)
        for i, x in enumerate((loud, quiet)):
            y = HC.condition_piece(x, "snr10", i, rng, FakeBanks(), [])
            self.assertEqual(len(y), len(x))
            self.assertAlmostEqual(10 * np.log10(A.active_power(x) / np.mean((y - x) ** 2)), 10.0, places=2)

    def test_room_keeps_the_length_and_rooms_go_in_turn(self):
        rooms = [({"key": "r1", "direct_path_samples": 0}, np.array([1.0], np.float32)),
                 ({"key": "r2", "direct_path_samples": 0}, np.array([1.0, 0.0, 0.0, 0.9], np.float32))]
        x = tone(4000)
        a = HC.condition_piece(x, "room", 0, None, FakeBanks(), rooms)
        b = HC.condition_piece(x, "room", 1, None, FakeBanks(), rooms)
        self.assertEqual((len(a), len(b)), (4000, 4000))
        np.testing.assert_allclose(a, x, rtol=1e-4, atol=1e-6)  # r1: a direct path alone
        self.assertGreater(np.abs(b - x).max(), 0.01)  # r2: a reflection
        c = HC.condition_piece(x, "room-snr10", 1, np.random.default_rng(0), FakeBanks(), rooms)
        self.assertAlmostEqual(10 * np.log10(A.active_power(b) / np.mean((c - b) ** 2)), 10.0, places=2)


if __name__ == "__main__":
    unittest.main()
