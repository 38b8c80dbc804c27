"""household_template_rules: a threshold of each template's own from the bank's best z or the other takes' z
(issue #37, part 2, session 17)."""
import unittest

import numpy as np

from hotphrase import household as H
from hotphrase.constants import EMB_DIM
from hotphrase.errors import HotPhraseError
from hotphraselab import household_template_rules as R


def unit(rng, n):
    x = rng.standard_normal((n, EMB_DIM))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


class Rules(unittest.TestCase):
    def test_the_rules_are_parsed_or_named(self):
        self.assertEqual(R.parse_rule("bank+0.5"), ("bank+", 0.5))
        self.assertEqual(R.parse_rule("takes*0.6"), ("takes*", 0.6))
        self.assertEqual(R.parse_rule("takes-3"), ("takes-", 3.0))
        for bad in ("bank-1", "takes+2", "takes*x", "cos+1", ""):
            with self.assertRaises(HotPhraseError):
                R.parse_rule(bad)

    def test_the_bank_max_is_the_best_z_over_the_segments(self):
        rng = np.random.default_rng(5)
        template = unit(rng, 8)
        plain = [unit(rng, 60) for _ in range(30)]  # large enough that one match hardly moves mu and sd
        stats, quiet = R.measured(template, plain)
        self.assertEqual(stats, H.bank_stats(template, plain))  # the mu and sd enrollment keeps, from the same pass
        s = H.dtw_scores([template], plain[0])[0, 7:]
        self.assertGreaterEqual(quiet, float(H.z_scores(s, *stats).max()))
        # the same bank with the template's own frames inside a segment: its best z is there, far above
        holding = plain[:-1] + [np.concatenate([plain[-1][:10], template, plain[-1][10:]])]
        self.assertGreater(R.measured(template, holding)[1], quiet + 5)
        # a segment shorter than the template is not read
        self.assertEqual(R.measured(template, plain + [template[:4]]), (stats, quiet))

    def test_the_takes_z_is_the_lowest_over_the_other_takes(self):
        rng = np.random.default_rng(6)
        bank = [unit(rng, 50) for _ in range(4)]
        a = unit(rng, 8)
        near = a + 0.05 * unit(rng, 8)
        near /= np.linalg.norm(near, axis=1, keepdims=True)
        far = unit(rng, 8)
        templates = [a, near, far]
        stats = [H.bank_stats(t, bank) for t in templates]
        z = R.takes_z(templates, stats)
        # a's z over near is high, over far low: the lowest is the far take's
        s = H.dtw_scores([a], far)[0]
        over_far = float(H.z_scores(s[np.isfinite(s)], *stats[0]).max())
        self.assertAlmostEqual(z[0], over_far)
        self.assertLess(z[0], 3)
        self.assertEqual(R.takes_z([a], stats[:1])[0], -np.inf)

    def test_a_rule_only_raises(self):
        bank_max = np.array([[4.0, 6.5]])
        takes = np.array([[12.0, 8.0]])
        np.testing.assert_allclose(R.raise_by(("bank+", 0.5), 6.0, bank_max, takes), [[0.0, 1.0]])
        np.testing.assert_allclose(R.raise_by(("takes*", 0.6), 6.0, bank_max, takes), [[1.2, 0.0]])
        np.testing.assert_allclose(R.raise_by(("takes-", 3.0), 6.0, bank_max, takes), [[3.0, 0.0]])
        np.testing.assert_allclose(R.raise_by(("takes-", 3.0), 6.0, bank_max, np.array([[-np.inf, 9.5]])),
                                   [[0.0, 0.5]])

    def test_wakes_and_clips_at_each_templates_own_threshold(self):
        # one enrollment of two templates over 60 steps: template 0 reaches 7 at step 5, template 1 reaches 6.2 at 40
        z = np.full((1, 2, 60), 0.0)
        z[0, 0, 5] = 7.0
        z[0, 1, 40] = 6.2
        self.assertEqual(R.wakes(z, np.zeros((1, 2)), 6.0)[0], 2)
        self.assertEqual(R.wakes(z, np.array([[0.0, 0.5]]), 6.0)[0], 1)  # template 1's threshold now 6.5
        self.assertEqual(R.wakes(z, np.array([[1.5, 0.5]]), 6.0)[0], 0)
        best = np.array([[[7.0, 5.0], [6.2, 6.9]]])  # [E, J, C]: two clips
        self.assertEqual(R.outcome(best, np.zeros((1, 2)), 6.0, [[0, 1]]), (2, 2))
        self.assertEqual(R.outcome(best, np.array([[0.0, 1.0]]), 6.0, [[0, 1]]), (1, 2))
        self.assertEqual(R.outcome(best, np.array([[0.0, 1.0]]), 6.0, [[1]]), (0, 1))


if __name__ == "__main__":
    unittest.main()
