"""The negative bank's choice of speakers (hotphrase/negative_bank.py) and household_eval's rigid scorers and
wake count: numpy only, no audio."""
import unittest

import numpy as np

from hotphrase import household_eval as HE
from hotphrase import negative_bank as NB
from hotphrase.errors import HotPhraseError


def rows():
    out = []
    for i in range(60):
        group = ("child", "female", "male")[i % 3]
        for split in ("train", "eval"):
            out.append({"source": "speechocean762", "kind": "speech", "speaker": f"{split}{i:03d}", "group": group,
                        "split": split, "path": f"{split}/so/{i}.flac", "licence": "CC BY 4.0"})
    out.append({"source": "speechocean762", "kind": "noise", "speaker": "noise", "group": "noise",
                "split": "train", "path": "train/so/noise.flac", "licence": "CC BY 4.0"})
    return out


class Selection(unittest.TestCase):
    def setUp(self):
        self.saved = dict(NB.SOURCES)
        NB.SOURCES.clear()
        NB.SOURCES["speechocean762"] = (9, 12.0, False)

    def tearDown(self):
        NB.SOURCES.clear()
        NB.SOURCES.update(self.saved)

    def test_training_speech_only_balanced_and_seeded(self):
        chosen = NB.select(rows(), 1)["speechocean762"]
        self.assertEqual(len(chosen), 9)
        self.assertTrue(all(s.startswith("train") for s in chosen))
        groups = [int(s[5:]) % 3 for s in chosen]
        self.assertEqual(sorted(groups), [0, 0, 0, 1, 1, 1, 2, 2, 2])
        self.assertEqual(chosen.keys(), NB.select(rows(), 1)["speechocean762"].keys())
        self.assertNotEqual(chosen.keys(), NB.select(rows(), 2)["speechocean762"].keys())

    def test_too_few_speakers(self):
        NB.SOURCES["speechocean762"] = (61, 12.0, False)
        with self.assertRaisesRegex(HotPhraseError, "60 training speakers in the manifest, the bank needs 61"):
            NB.select(rows(), 1)


class RigidAndWakes(unittest.TestCase):
    def test_mean_template_of_copies_is_the_template(self):
        rng = np.random.default_rng(0)
        T = rng.standard_normal((7, 96))
        T /= np.linalg.norm(T, axis=1, keepdims=True)
        np.testing.assert_allclose(HE.mean_template([T, T, T]), T, atol=1e-12)
        np.testing.assert_allclose(HE.resample(T, 7), T, atol=1e-12)
        X = np.concatenate([rng.standard_normal((5, 96)), T])
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        s = HE.rigid_scores(T, X)
        self.assertTrue(np.all(np.isinf(s[:6])))
        self.assertAlmostEqual(s[11], 0.0, places=12)
        self.assertGreater(s[6:11].min(), 0.1)

    def test_batched_bank_stats_are_household_bank_stats(self):
        from hotphrase import household as H
        rng = np.random.default_rng(1)
        segs = [rng.standard_normal((n, 96)).astype(np.float32) for n in (40, 7, 60)]
        sc = HE.Scorers(np.concatenate(segs).mean(axis=0), segs)
        T = [H.centre(rng.standard_normal((L, 96)), sc.mean) for L in (5, 9, 12)]
        np.testing.assert_allclose(sc.dtw_stats(T), [H.bank_stats(t, sc.bank) for t in T], rtol=1e-12)

    def test_count_wakes_refractory(self):
        z = np.full(200, -np.inf)
        z[[10, 11, 30, 34, 36, 100]] = 5.0
        # 10 wakes; 11, 30, 34 fall within its 25 steps; 36 wakes; 100 wakes
        self.assertEqual(HE.count_wakes(z, 4.0), 3)
        self.assertEqual(HE.count_wakes(z, 6.0), 0)


if __name__ == "__main__":
    unittest.main()
