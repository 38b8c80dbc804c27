"""speaker_check's windows, counts and threshold choice (issue #37, part 2, session 9), and household_eval's
candidate wakes it reads. numpy only: the encoder itself is not loaded here."""
import unittest

import numpy as np

from hotphrase import household as H
from hotphrase import household_eval as HE
from hotphrase.errors import HotPhraseError
from hotphraselab import speaker_check as SC


class Windows(unittest.TestCase):
    def test_gain_raises_a_quiet_window_to_minus_30_dbfs_and_never_lowers(self):
        quiet = np.full(SC.WINDOW * 2, 0.001)
        loud = np.full(SC.WINDOW, 0.5)
        g = SC.window_gains(np.concatenate([quiet, loud]), [SC.WINDOW, 3 * SC.WINDOW])
        self.assertAlmostEqual(20 * np.log10(0.001 * g[0]), -30.0, places=3)
        self.assertEqual(g[1], 1.0)

    def test_gain_counts_the_padding_before_the_start(self):
        x = np.full(SC.WINDOW // 2, 0.001)
        g = SC.window_gains(x, [len(x)])
        # half the window is silence: the mean square is half, the gain sqrt(2) more than a full window's
        full = SC.window_gains(np.full(SC.WINDOW, 0.001), [SC.WINDOW])
        self.assertAlmostEqual(g[0] / full[0], np.sqrt(2), places=4)

    def test_frames_centred_inside_the_window_scaled_by_the_gain_squared(self):
        mel = np.arange(1000, dtype=np.float32)[:, None] * np.ones((1, 2), np.float32)
        end = 500 * SC.HOP
        f = SC.window_frames(mel, [end, 100 * SC.HOP], [1.0, 2.0])
        self.assertEqual(f.shape, (2, SC.FRAMES, 2))
        np.testing.assert_array_equal(f[0, :, 0], np.arange(500 - SC.FRAMES, 500))
        # a window ending 1 s in: the first 60 frames before the start are zeros, then frames 0..99 x 4
        np.testing.assert_array_equal(f[1, :SC.FRAMES - 100, 0], 0)
        np.testing.assert_array_equal(f[1, SC.FRAMES - 100:, 0], 4 * np.arange(100))

    def test_window_ends_where_the_steps_audio_ends(self):
        # 128 samples after the Swift detector's report time (the Python front end's last chunk ends there)
        self.assertEqual(SC.window_end(0), H.step_end(0) + 128)
        self.assertEqual(SC.window_end(10) - SC.window_end(9), 1280)

    def test_a_rendering_must_hold_its_embeddings_steps(self):
        # a stream of the test side: 1,230,446 samples, 951 embeddings (e1_eval_extra_6173397eef.npz's 4th)
        SC.check_length(1230446, 951, "x")
        # the last embedding needs the audio up to its window's end, and no more
        SC.check_length(SC.window_end(4), 5, "x")
        SC.check_length(SC.window_end(5) - 1, 5, "x")
        with self.assertRaises(HotPhraseError):
            SC.check_length(SC.window_end(5), 5, "x")
        SC.check_length(100, 0, "x")


class Counts(unittest.TestCase):
    def test_a_clip_is_heard_when_both_the_z_and_the_voice_pass(self):
        best = np.array([[6.0, 4.0, 7.0], [3.0, 6.5, 6.5]])
        cos = np.array([[0.9, 0.9, 0.2], [0.9, 0.4, 0.8]])
        own = [np.array([0, 1]), np.array([2])]
        guests = [np.array([2]), np.array([0, 1])]
        self.assertEqual(SC.clip_outcomes(best, cos, own, guests, 5.0, -1.0), (1, 3, 2, 3))
        # the check drops enrollment 0's guest (0.2) and enrollment 1's guest at 0.4, keeps its own at 0.8
        self.assertEqual(SC.clip_outcomes(best, cos, own, guests, 5.0, 0.5), (1, 3, 0, 3))
        self.assertEqual(SC.clip_outcomes(best, cos, own, guests, 3.0, 0.85), (1, 3, 1, 3))

    def test_side_wakes_by_z_and_check(self):
        cand = np.array([[0, 0, 0, 5, 6], [0, 1, 0, 5, 7], [1, 1, 1, 9, 9], [0, 1, 2, 1, 1]])
        cos = np.array([0.8, 0.3, 0.9, 0.6])
        np.testing.assert_array_equal(SC.side_wakes(cand, cos, 0, 3, -1.0), [1, 2, 0])
        np.testing.assert_array_equal(SC.side_wakes(cand, cos, 0, 3, 0.5), [1, 1, 0])
        np.testing.assert_array_equal(SC.side_wakes(cand, cos, 1, 3, 0.95), [0, 0, 0])

    def test_threshold_the_lowest_within_target_searched_from_the_top(self):
        ths = [0.5, 0.6, 0.7, 0.8]
        self.assertEqual(SC.choose_threshold([3.0, 0.4, 0.6, 0.1], ths, 0.5), 0.8)
        self.assertEqual(SC.choose_threshold([3.0, 0.4, 0.2, 0.1], ths, 0.5), 0.6)
        self.assertIsNone(SC.choose_threshold([3.0, 2.0, 1.0, 0.9], ths, 0.5))


class Candidates(unittest.TestCase):
    def test_peak_waits_while_the_z_rises_at_most_six_steps(self):
        row = np.array([0, 6, 7, 8, 7, 9], float)
        self.assertEqual(HE.peak_step(row, 1), 3)
        rising = np.arange(20, dtype=float)
        self.assertEqual(HE.peak_step(rising, 2), 8)
        self.assertEqual(HE.peak_step(rising, 18), 19)

    def test_wake_steps_are_count_wakes_wakes(self):
        rng = np.random.default_rng(5)
        for _ in range(20):
            row = rng.standard_normal(300)
            got = HE.wake_steps(row, 0.5)
            self.assertEqual(len(got), HE.count_wakes(row, 0.5))
            self.assertTrue(all(b - a >= HE.REFRACTORY_STEPS for a, b in zip(got, got[1:])))
            self.assertTrue(all(row[t] >= 0.5 for t in got))

    def test_stream_candidates_find_a_take_in_a_stream(self):
        from test_household_eval import a_stream_holding_a_take  # tools/hotphrase/tests, on the path by test.sh
        scorers, enr, quiet, holding = a_stream_holding_a_take(seed=2)
        cand, lengths = HE.stream_candidates(enr, scorers, [quiet, holding], [5.9, 1e9])
        np.testing.assert_array_equal(lengths, [200, 212])
        self.assertEqual(cand.shape, (1, 5))
        k, e, s, t, p = cand[0]
        self.assertEqual((k, e, s), (0, 0, 1))
        self.assertEqual(p, 111)  # the take's last frame: the match peaks where it ends
        self.assertLessEqual(t, p)


class Summary(unittest.TestCase):
    def test_percentiles_of_the_candidates_own_clips_guests_and_sides(self):
        import json
        import os
        import tempfile
        info = {"clips": ["a", "b", "c"], "conditions": ["clean", "room"],
                "meta": [{"own": ["a", "b"], "guests": ["c"]}, {"own": ["c"], "guests": ["a", "b"]}],
                "sides": {"test": {}}}
        best = np.array([[6.0, 2.0, 4.0], [5.0, 5.0, 7.0]])
        cos = np.array([[0.9, 0.1, 0.3], [0.2, 0.4, 0.8]])
        cand = np.array([[0, 0, 0, 1, 1], [0, 1, 0, 5, 5], [1, 1, 0, 9, 9]])
        with tempfile.TemporaryDirectory() as d:
            cp, kp = os.path.join(d, "cand.npz"), os.path.join(d, "cos.npz")
            np.savez(cp, info=np.array(json.dumps(info)), zs=np.array([3.0, 5.9]), **{
                "best/clean": best, "best/room": best - 3, "cand/test": cand})
            np.savez(kp, **{"clip/clean": cos, "clip/room": cos, "cand/test": np.array([0.5, 0.7, 0.99])})
            zk, rows = SC.cosine_summary(cp, kp, 0)
            _, by = SC.cosine_summary(cp, kp, 0, {"room": ["rt0.2_1m+fan", "rt0.2_2m+babble", "rt0.4_1m+babble"],
                                                  "clean": ["clean"] * 3})
        self.assertEqual(zk, 3.0)
        got = {w: (n, p) for w, n, p in rows}
        # own clips whose best z reaches 3: enrollment 0's a (0.9; b at 2.0 is not a candidate), 1's c (0.8)
        self.assertEqual(got["clean, own"][0], 2)
        self.assertAlmostEqual(got["clean, own"][1][50], 0.85)
        # guests: 0's c (4.0, 0.3), 1's a and b (0.2, 0.4)
        self.assertEqual(got["clean, guests"][0], 3)
        self.assertAlmostEqual(got["clean, guests"][1][50], 0.3)
        # in the room (best - 3): 0's a at 3.0 (reaches it) and 1's c at 4.0; guests only clean
        self.assertEqual(got["room, own"][0], 2)
        self.assertNotIn("room, guests", got)
        by = {w: (n, p) for w, n, p in by}
        # room's own candidates: 0's a (fan, 0.9), 1's c (babble, 0.8); 0's b (babble) is under the z
        self.assertEqual(by["room, own, fan"][0], 1)
        self.assertAlmostEqual(by["room, own, fan"][1][50], 0.9)
        self.assertEqual(by["room, own, babble"][0], 1)
        self.assertAlmostEqual(by["room, own, babble"][1][50], 0.8)
        self.assertNotIn("clean, own, clean", by)  # one group: nothing to break down
        self.assertEqual(got["test side candidates"][0], 2)
        self.assertAlmostEqual(got["test side candidates"][1][50], 0.6)


class VoiceRenderings(unittest.TestCase):
    def test_three_renderings_seeded_by_the_take_at_10_db(self):
        from hotphrase import augment as A
        banks = {k: np.random.default_rng(1).standard_normal(16000).astype(np.float32) for k in SC.VOICE_NOISES}
        t = np.arange(8000)
        x = (0.1 * np.sin(2 * np.pi * 200 * t / 16000)).astype(np.float32)
        r = SC.voice_renderings(x, "a.wav", banks)
        self.assertEqual([len(y) for y in r], [len(x)] * 3)
        np.testing.assert_array_equal(r[1], SC.voice_renderings(x, "a.wav", banks)[1])
        self.assertFalse(np.array_equal(r[1], SC.voice_renderings(x, "b.wav", banks)[1]))
        # the room keeps the dry take's active power; the noise sits 10 dB under it
        self.assertAlmostEqual(A.active_power(r[0]) / A.active_power(x), 1.0, places=3)
        noise = r[1] - x
        self.assertAlmostEqual(10 * np.log10(A.active_power(x) / np.mean(noise.astype(np.float64) ** 2)), 10.0,
                               places=2)


if __name__ == "__main__":
    unittest.main()
