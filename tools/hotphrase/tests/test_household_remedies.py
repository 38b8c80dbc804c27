"""household_eval's session-4 remedies (issue #37, part 2): multi-condition enrollment (the variants' grammar, the
takes' renderings in training-side noise and procedural rooms, the templates they add) and the gate on the personal
path (the causal window, the fused decision with it, the false accepts it counts, the floor and z chosen)."""
import unittest

import numpy as np

from hotphrase import augment as A
from hotphrase import household as H
from hotphrase import household_eval as HE
from hotphrase.constants import EMB_DIM, SAMPLE_RATE
from hotphrase.errors import HotPhraseError


def take(seconds=1.0, seed=0, burst="tone"):
    """An int16 take: a tone (or noise) burst in the middle of faint noise."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SAMPLE_RATE)
    x = 30 * rng.standard_normal(n)
    a, b = n // 4, 3 * n // 4
    x[a:b] += 8000 * np.sin(np.arange(b - a) * 0.07) if burst == "tone" else 3000 * rng.standard_normal(b - a)
    return np.round(x).astype(np.int16)


class Variants(unittest.TestCase):
    def test_grammar(self):
        self.assertEqual(HE.parse_variant("clean"), [])
        self.assertEqual(HE.parse_variant("noise10+room10"), [("noise", 10.0, 0), ("room", 10.0, 0)])
        self.assertEqual(HE.parse_variant("noise10x2"), [("noise", 10.0, 0), ("noise", 10.0, 1)])
        self.assertEqual(HE.parse_variant("room"), [("room", None, 0)])
        self.assertEqual(HE.parse_variant("noise-5"), [("noise", -5.0, 0)])

    def test_bad_specs_name_the_token(self):
        for spec, tok in (("noise", "noise"), ("fan10", "fan10"), ("room10x0", "room10x0"), ("noise10+", "''"),
                          ("noise10+noise10", "noise10")):
            with self.assertRaises(HotPhraseError) as cm:
                HE.parse_variant(spec)
            self.assertIn(tok, str(cm.exception))


class Renderings(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(5)
        self.banks = {k: rng.standard_normal(5 * SAMPLE_RATE).astype(np.float32) for k in HE.ENROL_NOISES}

    def test_noise_at_the_snr_over_the_take_and_the_same_on_every_draw(self):
        x = take()
        clean = H.padded_take(x).astype(np.float64) / 32768
        y, drawn = HE.render_take(x, ("noise", 10.0, 0), "a.wav", self.banks)
        self.assertEqual(len(y), len(clean))
        self.assertEqual(len(drawn), 1)
        self.assertIn(drawn[0].split()[0], HE.ENROL_NOISES)
        noise = y / 32768 - clean
        snr = 10 * np.log10(A.active_power(clean.astype(np.float32)) / np.mean(noise ** 2))
        self.assertAlmostEqual(snr, 10.0, delta=0.2)
        np.testing.assert_array_equal(y, HE.render_take(x, ("noise", 10.0, 0), "a.wav", self.banks)[0])
        self.assertFalse(np.array_equal(y, HE.render_take(x, ("noise", 10.0, 1), "a.wav", self.banks)[0]))
        self.assertFalse(np.array_equal(y, HE.render_take(x, ("noise", 10.0, 0), "b.wav", self.banks)[0]))

    def test_room_keeps_the_direct_path_in_place_and_the_dry_power(self):
        x = take(burst="noise")  # white, so that the cross-correlation has one peak
        dry = H.padded_take(x).astype(np.float64) / 32768
        y, drawn = HE.render_take(x, ("room", None, 0), "a.wav", self.banks)
        self.assertEqual(drawn, ["room"])
        y = y / 32768
        self.assertAlmostEqual(A.active_power(y) / A.active_power(dry), 1.0, delta=0.02)
        lags = range(-50, 51)
        xc = [np.dot(dry[100:-100], np.roll(y, -k)[100:-100]) for k in lags]
        self.assertEqual(lags[int(np.argmax(xc))], 0)

    def test_procedural_room(self):
        for seed in range(20):
            h = HE.enrol_room_ir(np.random.default_rng(seed))
            self.assertEqual(h[0], 1.0)
            self.assertTrue(HE.ENROL_RT60[0] * SAMPLE_RATE - 1 <= len(h) <= HE.ENROL_RT60[1] * SAMPLE_RATE)
            drr = 10 * np.log10(1.0 / np.sum(h[1:] ** 2))
            self.assertTrue(HE.ENROL_DRR_DB[0] - 0.1 <= drr <= HE.ENROL_DRR_DB[1] + 0.1, drr)


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
        rem = HE.Remedies(scorers, [("clean", []), ("n", HE.parse_variant("noise10+room"))], enrolled, raw, audio,
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
        np.testing.assert_array_equal(HE.causal_max(g, 3), [0, 5, 5, 5, 1, 0])
        np.testing.assert_array_equal(HE.causal_max(g, 1), g)
        np.testing.assert_array_equal(HE.causal_max(g, 3, ahead=1), [5, 5, 5, 5, 1, 0])
        np.testing.assert_array_equal(HE.causal_max(g, 1, ahead=2), [5, 5, 1, 0, 0, 0])

    def test_gated_fires(self):
        n = 40
        z, g = np.full(n, -np.inf), np.zeros(n)
        z[20] = 9.0
        self.assertEqual(HE.gated_fires(z, 5.9, g, 0.8, None).sum(), 1)  # no gate: the template alone
        self.assertEqual(HE.gated_fires(z, 5.9, g, 0.8, 0.05).sum(), 0)  # the generic never rose
        g[21] = 0.1
        self.assertEqual(HE.gated_fires(z, 5.9, g, 0.8, 0.05).sum(), 0)  # after the template's step: too late
        g[20 - HE.GATE_STEPS + 1] = 0.1
        np.testing.assert_array_equal(np.flatnonzero(HE.gated_fires(z, 5.9, g, 0.8, 0.05)), [20])
        self.assertEqual(HE.gated_fires(z, 5.9, g, 0.8, 0.2).sum(), 0)  # below a higher floor
        self.assertEqual(HE.gated_fires(z, 5.9, g, 0.8, (0.2, 9.5)).sum(), 0)  # z below the bypass
        self.assertEqual(HE.gated_fires(z, 5.9, g, 0.8, (0.2, 9.0)).sum(), 1)  # z at the bypass: passes
        g[30] = 0.9
        np.testing.assert_array_equal(np.flatnonzero(HE.gated_fires(z, 5.9, g, 0.8, 0.95)), [30])  # generic alone

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
            pers, gen, fused = HE.remedies_false_accepts(FakeRem(), [np.zeros((n, EMB_DIM))],
                                                         [("h", None, None, 0.8)], 5.9,
                                                         [None, (0.05, None), (0.1, None), (0.1, 7.5)])
        finally:
            HE.generic_series = real
        self.assertEqual(gen.tolist(), [1])
        # no gate, floor 0.05 (one left), floor 0.1, floor 0.1 with the 7.5 bypass (the second one back)
        self.assertEqual(fused[0, :, 0, 0].tolist(), [3, 2, 1, 2])
        zi = {float(z_): i for i, z_ in enumerate(HE.Z_GRID)}
        self.assertEqual(pers[0, 0, zi[5.9]], 2)
        self.assertEqual(pers[0, 0, zi[7.0]], 1)
        self.assertEqual(pers[0, 0, zi[7.6]], 0)

    def test_gate_specs(self):
        self.assertEqual(HE.parse_gate("0.05"), (0.05, None))
        self.assertEqual(HE.parse_gate("0.1@7"), (0.1, 7.0))
        self.assertEqual([HE.gate_name(g) for g in (None, (0.05, None), (0.1, 7.0))], ["none", "0.05", "0.1@7"])
        for bad in ("x", "0.1@", "1.5", "0", "0.1@z"):
            with self.assertRaises(HotPhraseError) as cm:
                HE.parse_gate(bad)
            self.assertIn(bad, str(cm.exception))

    def test_z_needed_and_the_floor_chosen(self):
        grid = np.array([5.9, 6.0, 6.1, 6.2])
        self.assertEqual(HE.z_needed([0.9, 0.5, 0.2, 0.1], 0.2, grid), 6.1)
        self.assertEqual(HE.z_needed([0.1, 0.1, 0.0, 0.0], 0.2, grid), 5.9)
        self.assertIsNone(HE.z_needed([0.9, 0.8, 0.7, 0.6], 0.2, grid))
        self.assertEqual(HE.chosen_floor([3, 1, 0, 0], [None, 0.01, 0.05, 0.2]), 0.05)
        self.assertEqual(HE.chosen_floor([0, 0], [None, 0.01]), None)
        self.assertEqual(HE.chosen_floor([2, 1], [None, 0.01]), "not found")

    def test_pooled(self):
        heard = np.array([[True, False], [False, False], [True, True]])  # [clips, enrollments]
        own = np.array([[True, True, False], [False, False, True]])
        guests = np.array([[False, False, True], [True, True, False]])
        self.assertEqual(HE.pooled(heard, own, guests), (round(100 * 1 / 3, 2), round(100 * 1 / 3, 2)))


if __name__ == "__main__":
    unittest.main()
