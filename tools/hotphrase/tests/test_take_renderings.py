"""The takes' renderings household_head trains the personal head on (and the speaker's TakeRenderings.swift
reproduces): the variants' grammar, training-side noise at an SNR over the take, procedural rooms."""
import unittest

import numpy as np

from hotphrase import augment as A
from hotphrase import household as H
from hotphrase import household_eval as HE
from hotphrase.constants import SAMPLE_RATE
from hotphrase.errors import HotPhraseError
from hotphrase.testing import take


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


if __name__ == "__main__":
    unittest.main()
