"""The session-4 remedies (hotphraselab.household_remedies; issue #37, part 2): multi-condition enrollment (the
templates the takes' renderings add) and the gate on the personal path (the causal window, the fused decision with
it, the false accepts it counts, the floor and z chosen)."""
import unittest

import numpy as np

from hotphrase import household as H
from hotphrase import household_eval as HE
from hotphrase.constants import EMB_DIM, SAMPLE_RATE
from hotphrase.errors import HotPhraseError
from hotphraselab import household_remedies as R
from hotphrase.testing import take


class Templates(unittest.TestCase):
    def test_clean_variant_is_the_baseline_and_renderings_are_shared_between_draws(self):
        rng = np.random.default_rng(1)
        bank = [rng.standard_normal((60, EMB_DIM)).astype(np.float32) for _ in range(6)]
        scorers = HE.Scorers(np.zeros(EMB_DIM), bank)
        names = ["a", "b", "c", "d"]
        raw = {n: rng.standard_normal((8, EMB_DIM)).astype(np.float32) for n in names}
        audio = {n: take(seed=i) for i, n in enumerate(names)}
        spans = {n: H.check_take(audio[n]) for n in names}

        def embedder(samples):  # a stand-in network: one frame a step, from the samples it has heard
            k = np.arange(max(0, (len(samples) - 13152) // 1280 + 1))
            t = np.array([H.step_end(i) for i in k], np.int64)
            e = np.stack([np.resize(samples[max(0, s - 1280):s].astype(np.float32), EMB_DIM) for s in t])
            return e, t
        banks = {f: np.random.default_rng(2).standard_normal(3 * SAMPLE_RATE).astype(np.float32)
                 for f in HE.ENROL_NOISES}
        enrolled = [["a", "b", "c"], ["a", "b", "d"]]
        rem = R.Remedies(scorers, [("clean", []), ("n", HE.parse_variant("noise10+room"))], enrolled, raw, audio,
                          spans, embedder, banks)
        self.assertEqual(rem.templates_per_enrollment(0), 3)
        self.assertEqual(rem.templates_per_enrollment(1), 9)
        self.assertEqual(len(rem.T), 4 + 4 * 2)  # each take and each of its renderings once
        self.assertEqual(rem.ids[1][0][3:5], rem.ids[1][1][3:5])  # take a's renderings in both enrollments
        stream = rng.standard_normal((40, EMB_DIM)).astype(np.float32)
        stream[10:18] = raw["b"]
        base = [scorers.enrol([raw[n] for n in e]) for e in enrolled]
        np.testing.assert_allclose(rem.z(stream)[0], HE.personal(base, stream, scorers, "dtw"), rtol=1e-9)
        # more templates: the max over a superset
        self.assertTrue(np.all(rem.z(stream)[1] >= rem.z(stream)[0]))


class Gate(unittest.TestCase):
    def test_causal_max(self):
        g = np.array([0.0, 5, 1, 0, 0, 0])
        np.testing.assert_array_equal(R.causal_max(g, 3), [0, 5, 5, 5, 1, 0])
        np.testing.assert_array_equal(R.causal_max(g, 1), g)
        np.testing.assert_array_equal(R.causal_max(g, 3, ahead=1), [5, 5, 5, 5, 1, 0])
        np.testing.assert_array_equal(R.causal_max(g, 1, ahead=2), [5, 5, 1, 0, 0, 0])

    def test_gated_fires(self):
        n = 40
        z, g = np.full(n, -np.inf), np.zeros(n)
        z[20] = 9.0
        self.assertEqual(R.gated_fires(z, 5.9, g, 0.8, None).sum(), 1)  # no gate: the template alone
        self.assertEqual(R.gated_fires(z, 5.9, g, 0.8, 0.05).sum(), 0)  # the generic never rose
        g[21] = 0.1
        self.assertEqual(R.gated_fires(z, 5.9, g, 0.8, 0.05).sum(), 0)  # after the template's step: too late
        g[20 - R.GATE_STEPS + 1] = 0.1
        np.testing.assert_array_equal(np.flatnonzero(R.gated_fires(z, 5.9, g, 0.8, 0.05)), [20])
        self.assertEqual(R.gated_fires(z, 5.9, g, 0.8, 0.2).sum(), 0)  # below a higher floor
        self.assertEqual(R.gated_fires(z, 5.9, g, 0.8, (0.2, 9.5)).sum(), 0)  # z below the bypass
        self.assertEqual(R.gated_fires(z, 5.9, g, 0.8, (0.2, 9.0)).sum(), 1)  # z at the bypass: passes
        g[30] = 0.9
        np.testing.assert_array_equal(np.flatnonzero(R.gated_fires(z, 5.9, g, 0.8, 0.95)), [30])  # generic alone

    def test_false_accepts_added_by_the_templates_and_removed_by_the_gate(self):
        n = 300
        g = np.zeros(n, np.float32)
        g[40] = 0.9  # a generic wake
        g[150] = 0.06  # a little evidence before the template's second false accept
        z = np.full((1, 1, n), -np.inf)
        z[0, 0, [100, 160]] = [6.5, 7.5]  # two template false accepts, 60 steps apart

        class FakeRem:
            variants, ids = [("clean", [])], [[[0]]]

            def z(self, raw):
                return z
        real = HE.generic_series
        HE.generic_series = lambda head, arrays, raw: g
        try:
            pers, gen, fused = R.remedies_false_accepts(FakeRem(), [np.zeros((n, EMB_DIM))],
                                                         [("h", None, None, 0.8)], 5.9,
                                                         [None, (0.05, None), (0.1, None), (0.1, 7.5)])
        finally:
            HE.generic_series = real
        self.assertEqual(gen.tolist(), [1])
        # no gate, floor 0.05 (one left), floor 0.1, floor 0.1 with the 7.5 bypass (the second one back)
        self.assertEqual(fused[0, :, 0, 0].tolist(), [3, 2, 1, 2])
        zi = {float(z_): i for i, z_ in enumerate(R.Z_GRID)}
        self.assertEqual(pers[0, 0, zi[5.9]], 2)
        self.assertEqual(pers[0, 0, zi[7.0]], 1)
        self.assertEqual(pers[0, 0, zi[7.6]], 0)

    def test_gate_specs(self):
        self.assertEqual(R.parse_gate("0.05"), (0.05, None))
        self.assertEqual(R.parse_gate("0.1@7"), (0.1, 7.0))
        self.assertEqual([R.gate_name(g) for g in (None, (0.05, None), (0.1, 7.0))], ["none", "0.05", "0.1@7"])
        for bad in ("x", "0.1@", "1.5", "0", "0.1@z"):
            with self.assertRaises(HotPhraseError) as cm:
                R.parse_gate(bad)
            self.assertIn(bad, str(cm.exception))

    def test_z_needed_and_the_floor_chosen(self):
        grid = np.array([5.9, 6.0, 6.1, 6.2])
        self.assertEqual(R.z_needed([0.9, 0.5, 0.2, 0.1], 0.2, grid), 6.1)
        self.assertEqual(R.z_needed([0.1, 0.1, 0.0, 0.0], 0.2, grid), 5.9)
        self.assertIsNone(R.z_needed([0.9, 0.8, 0.7, 0.6], 0.2, grid))
        self.assertEqual(R.chosen_floor([3, 1, 0, 0], [None, 0.01, 0.05, 0.2]), 0.05)
        self.assertEqual(R.chosen_floor([0, 0], [None, 0.01]), None)
        self.assertEqual(R.chosen_floor([2, 1], [None, 0.01]), "not found")

    def test_pooled(self):
        heard = np.array([[True, False], [False, False], [True, True]])  # [clips, enrollments]
        own = np.array([[True, True, False], [False, False, True]])
        guests = np.array([[False, False, True], [True, True, False]])
        self.assertEqual(R.pooled(heard, own, guests), (round(100 * 1 / 3, 2), round(100 * 1 / 3, 2)))


if __name__ == "__main__":
    unittest.main()
