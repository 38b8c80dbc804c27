"""household_eval's comparison of the generic model, the personal scorer and the two fused (issue #37, "Honest
evaluation"): the fused decision, the pooled clip outcomes, the head's threshold and scores' alignment with the
personal scorer's steps, and the clip caches. numpy only."""
import json
import os
import tempfile
import unittest

import numpy as np

from hotphrase import household_eval as HE
from hotphrase.constants import EMB_DIM
from hotphrase.errors import HotPhraseError


class Fusion(unittest.TestCase):
    def test_either_fires(self):
        z = np.array([-np.inf, 6.0, 5.0, 1.0, 7.0])
        g = np.array([-np.inf, 0.1, 0.8, 0.2, 0.9])
        np.testing.assert_array_equal(HE.fused_fires(z, 5.9, g, 0.7), [0, 1, 1, 0, 1])

    def test_fused_wakes_share_one_refractory_period(self):
        # personal fires at step 0, generic at step 10 (inside 2 s), then generic alone at step 40
        n = 60
        z = np.full(n, -np.inf)
        g = np.zeros(n)
        z[0] = 9.0
        g[10] = 0.95
        g[40] = 0.95
        fire = HE.fused_fires(z, 5.9, g, 0.7)
        self.assertEqual(HE.count_wakes(fire, 0.5), 2)
        self.assertEqual(HE.count_wakes(g, 0.7), 2)
        self.assertEqual(HE.count_wakes(z, 5.9), 1)


class FalseAccepts(unittest.TestCase):
    def test_a_stream_holding_a_take_wakes_once_and_rates_are_per_hour(self):
        rng = np.random.default_rng(0)
        bank = [rng.standard_normal((60, EMB_DIM)).astype(np.float32) for _ in range(8)]
        scorers = HE.Scorers(np.zeros(EMB_DIM), bank)
        takes = [rng.standard_normal((12, EMB_DIM)).astype(np.float32) for _ in range(HE.TAKES)]
        enr = [scorers.enrol(takes)]
        quiet = rng.standard_normal((200, EMB_DIM)).astype(np.float32)
        holding = np.concatenate([quiet[:100], takes[0], quiet[100:]])
        p, g, f = HE.false_accepts(enr, scorers, [quiet], 5.9, [])
        self.assertEqual((p.tolist(), g, f), ([0.0], {}, {}))
        p, _, _ = HE.false_accepts(enr, scorers, [quiet, holding], 5.9, [])
        self.assertEqual(p.tolist(), [1.0])
        r = HE.fa_rates(np.array([1.0, 3.0]), {"h": 2}, {"h": np.array([2.0, 4.0])}, 2.0)
        self.assertEqual(r["personal"], {"test_fa_per_hour_mean": 1.0, "test_fa_per_hour_worst_enrollment": 1.5})
        self.assertEqual(r["h"]["generic"], {"test_fa_per_hour": 1.0})
        self.assertEqual(r["h"]["fused"], {"test_fa_per_hour_mean": 1.5, "test_fa_per_hour_worst_enrollment": 2.0})

    def test_missing_rendering_is_named(self):
        with self.assertRaises(HotPhraseError) as e:
            HE.load_streams(["/nonexistent/e1_eval_extra_x.npz"])
        self.assertIn("e1_eval_extra_x.npz", str(e.exception))


class ClipOutcomes(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(HE.clip_outcomes([0.1, 0.7, 0.9], [0.69, 0.7], 0.7), [1, 3, 1, 2])

    def test_no_guests(self):
        self.assertEqual(HE.clip_outcomes([6.0], [], 5.9), [0, 1, 0, 0])


class GenericHead(unittest.TestCase):
    def head(self, frames=3, smoothing=1):
        # one dense layer summing the window's first numbers, then a sigmoid
        w = np.zeros((frames * 96, 1), np.float32)
        w[::96, 0] = 1.0
        head = {"frames": frames, "smoothing": smoothing,
                "layers": [{"type": "dense", "w": "w", "b": "b"}, {"type": "sigmoid"}]}
        return head, {"w": w, "b": np.zeros(1, np.float32)}

    def test_scores_line_up_with_the_personal_steps(self):
        head, arrays = self.head(frames=3)
        raw = np.zeros((6, 96), np.float32)
        raw[4, 0] = 10.0  # the windows ending at steps 4 and 5 hold it
        g = HE.generic_series(head, arrays, raw)
        self.assertEqual(len(g), 6)
        self.assertTrue(np.all(np.isneginf(g[:2])))
        np.testing.assert_allclose(g[2:], [0.5, 0.5, 1 / (1 + np.exp(-10.0)), 1 / (1 + np.exp(-10.0))], rtol=1e-6)

    def test_short_stream(self):
        head, arrays = self.head(frames=3)
        self.assertTrue(np.all(np.isneginf(HE.generic_series(head, arrays, np.zeros((2, 96), np.float32)))))

    def test_threshold_from_eval_json(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(HotPhraseError) as cm:
                HE.generic_threshold(d)
            self.assertIn("eval.json", str(cm.exception))
            with open(os.path.join(d, "eval.json"), "w") as f:
                json.dump({"negatives": {}}, f)
            with self.assertRaises(HotPhraseError) as cm:
                HE.generic_threshold(d)
            self.assertIn("threshold_at_0.5_fa_per_hour", str(cm.exception))
            with open(os.path.join(d, "eval.json"), "w") as f:
                json.dump({"negatives": {"threshold_at_0.5_fa_per_hour": 0.697}}, f)
            self.assertEqual(HE.generic_threshold(d), 0.697)


class ClipCache(unittest.TestCase):
    def test_sorted_names_and_count(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "e1_eval_real_w.npz")
            emb = np.arange(5 * 96, dtype=np.float16).reshape(5, 96)
            np.savez(p, emb=emb, offsets=np.array([0, 2, 5]))
            got = HE.load_clips_npz(p, {"b.wav": 1, "a.wav": 0})
            np.testing.assert_array_equal(got["a.wav"], emb[:2])
            np.testing.assert_array_equal(got["b.wav"], emb[2:])
            with self.assertRaises(HotPhraseError) as cm:
                HE.load_clips_npz(p, {"a.wav": 0})
            self.assertIn("2 clips", str(cm.exception))
            with self.assertRaises(HotPhraseError):
                HE.load_clips_npz(os.path.join(d, "none.npz"), {"a.wav": 0})


if __name__ == "__main__":
    unittest.main()
