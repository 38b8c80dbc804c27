"""household_conditions' renderings of the real clips: the clean set's layout, the SNR over the clip's active
power, the room's alignment and level (with scipy, skipped without it), the condition names and the drawing."""
import importlib.util
import unittest

import numpy as np

from hotphrase import augment as A
from hotphrase import household_conditions as HC
from hotphrase.testing import FakeBanks, tone


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
