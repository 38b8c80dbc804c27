"""Recipe e1's variants (BENCHMARKS.md, "Recipe e1, session 3"): the mean of several heads' scores (hotphrase.evaluate
--format 2) and the slowed share of clips (hotphrase.train --format 2). They import the augmentation (scipy), so
they are skipped without the training venv (PYTHON=.venv-hotphrase/bin/python tools/hotphrase/test.sh)."""
import importlib.util
import shutil
import unittest

import numpy as np

from hotphrase.errors import HotPhraseError

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None


def random_head(seed, frames=4, dim=96, hidden=8):
    rng = np.random.default_rng(seed)
    arrays = {"d.w": rng.standard_normal((frames * dim, hidden)).astype(np.float32) * 0.1,
              "d.b": np.zeros(hidden, np.float32),
              "o.w": rng.standard_normal((hidden, 1)).astype(np.float32), "o.b": np.zeros(1, np.float32)}
    head = {"frames": frames, "smoothing": 3, "refractory_seconds": 2.0, "embedding_dim": dim,
            "layers": [{"type": "dense", "w": "d.w", "b": "d.b"}, {"type": "relu"},
                       {"type": "dense", "w": "o.w", "b": "o.b"}, {"type": "sigmoid"}]}
    return head, arrays


@unittest.skipUnless(HAVE_SCIPY, "needs scipy (the training venv)")
class Ensemble(unittest.TestCase):
    def test_one_head_is_the_head(self):
        from hotphrase import embedding as E
        from hotphrase import evaluate_format2 as V
        h, a = random_head(1)
        emb = np.random.default_rng(2).standard_normal((40, 96)).astype(np.float16)
        np.testing.assert_array_equal(V.Scorer([(h, a)]).scores(emb), E.head_scores(h, a, emb.astype(np.float32))[0])

    def test_mean_of_heads(self):
        from hotphrase import embedding as E
        from hotphrase import evaluate_format2 as V
        heads = [random_head(s) for s in (1, 2, 3)]
        emb = np.random.default_rng(2).standard_normal((40, 96)).astype(np.float32)
        want = np.mean([E.head_scores(h, a, emb)[0] for h, a in heads], axis=0)
        np.testing.assert_allclose(V.Scorer(heads).scores(emb), want, rtol=0, atol=1e-7)

    def test_heads_must_share_their_window(self):
        from hotphrase import evaluate_format2 as V
        with self.assertRaises(HotPhraseError):
            V.Scorer([random_head(1), random_head(2, frames=5)])


@unittest.skipUnless(HAVE_SCIPY and shutil.which("sox"), "needs scipy and sox (the training venv)")
class Slowed(unittest.TestCase):
    def test_share_zero_is_the_recipe(self):
        from hotphrase import train_format2 as T
        clips = [np.ones(16000, np.float32)]
        self.assertIs(T.slowed(clips, 0.0, (0.6, 0.85), 1), clips)
        self.assertEqual(T.slow_tag(0.0, (0.6, 0.85)), "")

    def test_slowed_clips_are_longer_by_the_tempo(self):
        from hotphrase import train_format2 as T
        x = (0.1 * np.sin(2 * np.pi * 200 * np.arange(16000) / 16000)).astype(np.float32)
        out = T.slowed([x] * 40, 0.5, (0.6, 0.85), 7)
        ratios = np.array([len(y) / len(x) for y in out])
        changed = ratios > 1.01
        self.assertTrue(5 < changed.sum() < 35)
        self.assertTrue(np.all((ratios[changed] > 1 / 0.86) & (ratios[changed] < 1 / 0.59)))
        self.assertTrue(np.all(ratios[~changed] == 1.0))


if __name__ == "__main__":
    unittest.main()
