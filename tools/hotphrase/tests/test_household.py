"""The personal scorer's reference (hotphrase/household.py) against docs/household.md: the take checks, the
template trim, subsequence DTW (streaming, vectorised and the brute-force definition), the bank file, mu/sd, z and
the fused decision. numpy only; the template test reads the embedding fixture's model (float16 weights)."""
import os
import tempfile
import unittest

import numpy as np

from hotphrase import household as H
from hotphrase.constants import SAMPLE_RATE
from hotphrase.errors import HotPhraseError

MODEL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "Tests", "HotPhraseTests", "Fixtures",
                     "embedding", "test.hpm")


def unit_rows(rng, n, dim=96):
    x = rng.standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def burst(seconds, lead=0.3, tail=0.3, amp=8000, freq=220.0, noise=30.0, seed=0):
    """A harmonic tone burst (speech-like level) in faint noise, int16."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SAMPLE_RATE)
    t = np.arange(n) / SAMPLE_RATE
    tone = amp * (np.sin(2 * np.pi * freq * t) + 0.5 * np.sin(2 * np.pi * 3 * freq * t)) / 1.5
    x = np.concatenate([np.zeros(int(lead * SAMPLE_RATE)), tone, np.zeros(int(tail * SAMPLE_RATE))])
    x += noise * rng.standard_normal(len(x))
    return np.round(x).astype(np.int16)


class TakeChecks(unittest.TestCase):
    def kind(self, x):
        with self.assertRaises(H.TakeError) as cm:
            H.check_take(x, "t.wav")
        self.assertIn("t.wav", str(cm.exception))
        return cm.exception.kind

    def test_speech_span_of_a_burst(self):
        s, e = H.check_take(burst(0.8, lead=0.3))
        self.assertAlmostEqual(s, 0.30, delta=0.011)
        self.assertAlmostEqual(e, 1.10, delta=0.011)

    def test_each_rejection_in_order(self):
        self.assertEqual(self.kind(np.zeros(0, np.int16)), "empty")
        self.assertEqual(self.kind(burst(10.5, lead=0, tail=0)), "too long")
        loud = burst(0.8, amp=60000).clip(-32767, 32767).astype(np.int16)
        self.assertEqual(self.kind(loud), "clipped")
        # clipped is checked before too long speech
        self.assertEqual(self.kind(burst(3.0, amp=60000).clip(-32767, 32767).astype(np.int16)), "clipped")
        self.assertEqual(self.kind(burst(0.8, amp=200, noise=3)), "too quiet")
        self.assertEqual(self.kind(np.zeros(16000, np.int16)), "too quiet")
        flat = np.full(16000, 3000, np.int16) * np.where(np.arange(16000) % 2, 1, -1).astype(np.int16)
        self.assertEqual(self.kind(flat), "no speech found")
        self.assertEqual(self.kind(burst(2.6)), "speech too long")
        H.check_take(burst(2.4))

    def test_clipping_threshold_is_a_fraction(self):
        x = burst(0.8)
        x[:10] = 32000  # 10 of ~22,000 samples: under 0.1 %
        H.check_take(x)
        x[:30] = 32000
        self.assertEqual(self.kind(x), "clipped")


class Frames(unittest.TestCase):
    def test_centre(self):
        m = np.arange(96, dtype=np.float64)
        e = np.stack([m, m + 2.0, m * 3])
        x = H.centre(e, m)
        self.assertTrue(np.all(x[0] == 0))
        np.testing.assert_allclose(np.linalg.norm(x[1:], axis=1), 1.0)
        np.testing.assert_allclose(x[1], np.full(96, 1 / np.sqrt(96)))

    def test_step_end_is_the_detectors_report(self):
        # EmbeddingScorer reports ((groups * 8) - 1) * 160 + 512 with groups = k + 10 for embedding k
        for k in (0, 1, 57):
            self.assertEqual(H.step_end(k), ((k + 10) * 8 - 1) * 160 + 512)

    @unittest.skipUnless(os.path.exists(MODEL), "no embedding fixture model")
    def test_template_frames_lie_in_the_span(self):
        from hotphrase import export_embedding as E
        header, ts = E.load(MODEL)
        x = burst(0.8, lead=0.3)
        e, t, (s, end) = H.template_frames(header, ts, x)
        self.assertTrue(H.MIN_TEMPLATE_FRAMES <= len(e) <= H.MAX_TEMPLATE_FRAMES)
        self.assertEqual(e.shape[1], 96)
        self.assertTrue(np.all(t >= (s + 0.24) * SAMPLE_RATE) and np.all(t <= (end + 0.40) * SAMPLE_RATE))
        self.assertTrue(np.all(np.diff(t) == 1280))
        # every frame of that range is kept: one step earlier or later falls outside it
        self.assertLess(t[0] - 1280, (s + 0.24) * SAMPLE_RATE)
        self.assertGreater(t[-1] + 1280, (end + 0.40) * SAMPLE_RATE)


class Dtw(unittest.TestCase):
    def test_streaming_vectorised_and_brute_force_agree(self):
        rng = np.random.default_rng(1)
        X = unit_rows(rng, 60)
        templates = [unit_rows(rng, L) for L in (1, 2, 3, 7, 24)]
        vec = H.dtw_scores(templates, X)
        for j, T in enumerate(templates):
            full = H.dtw_scores_full(T, X)
            d = H.Dtw(T)
            stream = np.array([d.step(x) for x in X])
            np.testing.assert_array_equal(np.isinf(full), np.isinf(stream))
            f = np.isfinite(full)
            np.testing.assert_allclose(stream[f], full[f], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(vec[j][f], full[f], rtol=1e-12, atol=1e-12)
            self.assertTrue(np.array_equal(np.isinf(vec[j]), np.isinf(full)))

    def test_first_path_after_half_the_template(self):
        rng = np.random.default_rng(2)
        for L in (4, 5, 10):
            s = H.dtw_scores_full(unit_rows(rng, L), unit_rows(rng, 3 * L))
            first = int(np.flatnonzero(np.isfinite(s))[0])
            # frame 0 holds template frame 0 alone; the other L - 1 go at most two to a stream frame
            self.assertEqual(first, L // 2)

    def test_exact_slow_and_fast_copies(self):
        rng = np.random.default_rng(3)
        T = unit_rows(rng, 8)
        noise = unit_rows(rng, 10)
        # the template itself inside other frames: distance 0 where it ends
        s = H.dtw_scores_full(T, np.concatenate([noise, T, noise]))
        self.assertAlmostEqual(s[10 + 7], 0.0, places=12)
        self.assertGreater(s[5], 0.1)
        # the person at half speed: every template frame twice, one skipped each time -> still 0
        s = H.dtw_scores_full(T, np.concatenate([noise, np.repeat(T, 2, axis=0), noise]))
        self.assertAlmostEqual(s[10 + 15], 0.0, places=12)
        # the fastest match: 8 template frames on 5 stream frames, frame 0 alone, then one single and three
        # pairs in any order; the score is the cheapest of those four paths' mean distances
        Y = unit_rows(rng, 5)
        c = H.distances(T, Y)
        costs = []
        for single in range(1, 5):
            rows, i = [(0, 0)], 1
            for f in range(1, 5):
                for _ in range(1 if f == single else 2):
                    rows.append((i, f))
                    i += 1
            costs.append(np.mean([c[i, f] for i, f in rows]))
        s = H.dtw_scores_full(T, Y)
        self.assertTrue(np.all(np.isinf(s[:4])))
        self.assertAlmostEqual(s[4], min(costs), places=12)

    def test_a_third_of_the_speed_is_no_match(self):
        rng = np.random.default_rng(4)
        T = unit_rows(rng, 6)
        s = H.dtw_scores_full(T, np.repeat(T, 3, axis=0))
        self.assertGreater(s.min(), 0.01)  # at most one stream frame skipped per template frame


class Bank(unittest.TestCase):
    def test_round_trip_and_stats(self):
        rng = np.random.default_rng(5)
        segs = [rng.standard_normal((n, 96)).astype(np.float32) for n in (30, 5, 44)]
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bank.hpm")
            H.write_bank(p, segs, 4.25, [{"name": "x", "licence": "CC0", "seconds": 1, "speakers": 1}])
            header, frames, mean, back = H.read_bank(p)
            self.assertEqual(header["segments"], [30, 5, 44])
            self.assertEqual(header["z_threshold"], 4.25)
            np.testing.assert_allclose(frames, np.concatenate(segs), atol=0.01)
            np.testing.assert_allclose(mean, frames.astype(np.float64).mean(axis=0), atol=1e-6)
            for a, b in zip(back, segs):
                self.assertEqual(a.shape, b.shape)
            T = H.centre(rng.standard_normal((8, 96)), mean)
            c = [H.centre(s, mean) for s in back]
            mu, sd = H.bank_stats(T, c)
            # by hand: the scores from frame L - 1 of every segment long enough (the 5-frame one is not)
            want = np.concatenate([H.dtw_scores_full(T, c[0])[7:], H.dtw_scores_full(T, c[2])[7:]])
            self.assertAlmostEqual(mu, want.mean(), places=10)
            self.assertAlmostEqual(sd, want.std(), places=10)

    def test_bad_bank_files(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bank.hpm")
            H.write_bank(p, [np.zeros((4, 96), np.float32)], 1.0, [])
            from hotphrase import hpmfile
            hpmfile.update_header(p, {"segments": [3]})
            with self.assertRaisesRegex(HotPhraseError, "segment lengths sum to 3"):
                H.read_bank(p)
            hpmfile.update_header(p, {"format": 2})
            with self.assertRaisesRegex(HotPhraseError, "not a negative bank"):
                H.read_bank(p)


class Decision(unittest.TestCase):
    def test_z_and_sensitivity(self):
        np.testing.assert_allclose(H.z_scores([0.5, 0.9], 0.9, 0.1), [4.0, 0.0])
        self.assertEqual(H.z_scores(0.5, 0.9, 0.0), (0.9 - 0.5) / 1e-6)
        self.assertEqual(H.z_threshold_at(4.0, 0.5), 4.0)
        self.assertEqual(H.z_threshold_at(4.0, 0.75), 3.0)
        self.assertEqual(H.z_threshold_at(4.0, 0.25), 5.0)

    def test_fusion_shares_one_refractory_period(self):
        times = np.arange(10) * 0.5
        generic = np.array([0, .9, 0, 0, 0, 0, 0, 0, 0, 0])
        z = np.array([[0, 0, 0, 9, 0, 0, 0, 0, 9, 0]])
        # generic at 0.5 s; the personal hit at 1.5 s is within 2 s of it; the one at 4.0 s is not
        self.assertEqual(H.fused_detections(times, generic, 0.5, z, [4.0], wait=0), [0.5, 4.0])
        self.assertEqual(H.fused_detections(times, None, None, z, [4.0], wait=0), [1.5, 4.0])
        self.assertEqual(H.fused_detections(times, None, None, z, [10.0]), [])
        # waiting for the peak, the personal wakes come a step later (their z falls at once)
        self.assertEqual(H.fused_detections(times, generic, 0.5, z, [4.0]), [0.5, 4.5])
        self.assertEqual(H.fused_detections(times, None, None, z, [4.0]), [2.0, 4.5])

    def test_a_personal_wake_waits_for_its_peak(self):
        times = np.arange(12) * 0.08
        # crosses 4 at step 3, peaks at step 5 (7.0), falls at step 6
        z = np.array([[0, 1, 3, 5, 6, 7, 6, 5, 2, 0, 0, 0]], float)
        at = {w: H.fused_detections(times, None, None, z, [4.0], wait=w) for w in (0, 1, 2, 3, 5)}
        self.assertEqual(at[0], [times[3]])
        self.assertEqual(at[1], [times[4]])       # one step on, still rising: it waits no longer
        self.assertEqual(at[2], [times[5]])
        self.assertEqual(at[3], [times[6]])       # the first step after the peak
        self.assertEqual(at[5], [times[6]])
        self.assertGreaterEqual(H.PEAK_WAIT_STEPS, 3)
        self.assertEqual(H.fused_detections(times, None, None, z, [4.0]), [times[6]])
        # the input ends while it waits: the wake comes at the last step
        self.assertEqual(H.fused_detections(times[:5], None, None, z[:, :5], [4.0], wait=3), [times[4]])
        # a generic wake while it waits is the wake (at its own step), and the refractory period runs from it
        generic = np.zeros(12)
        generic[4] = 0.9
        self.assertEqual(H.fused_detections(times, generic, 0.5, z, [4.0], wait=3), [times[4]])

    def test_household_negative_raises_the_threshold(self):
        rng = np.random.default_rng(6)
        T = unit_rows(rng, 6)
        near = T + 0.3 * unit_rows(rng, 6)
        near /= np.linalg.norm(near, axis=1, keepdims=True)
        far = unit_rows(rng, 10)
        mu, sd = 0.95, 0.05
        self.assertEqual(H.negative_threshold(3.0, T, mu, sd, [far]), 3.0)
        z_near = H.z_scores(H.dtw_scores_full(T, near), mu, sd)
        self.assertAlmostEqual(H.negative_threshold(3.0, T, mu, sd, [far, near]),
                               np.nanmax(z_near[np.isfinite(z_near)]) + 0.5)


if __name__ == "__main__":
    unittest.main()
