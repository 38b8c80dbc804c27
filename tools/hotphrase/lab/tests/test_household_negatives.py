"""The household's own false wakes replayed as the speaker keeps them (hotphraselab/household_negatives.py, issue #37
part 2 sessions 7b and 8): a wake's frames become a negative that raises the templates' thresholds for what follows
(docs/household.md, "Fusion and the household's negatives"), the newest 64 kept. numpy only."""
import unittest

import numpy as np

from hotphrase import household as H
from hotphrase import household_eval as HE
from hotphraselab import household_negatives as N


def unit_rows(rng, n, dim=96):
    x = rng.standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


STATS = (1.0, 0.1)  # mu, sd: a random frame scores about 1 (z about 0), an exact match 0 (z 10)


def stream_with(template, rng, at, n=300):
    """Random centred frames with the template's frames written in at each position of `at`."""
    x = unit_rows(rng, n)
    for a in at:
        x[a:a + len(template)] = template
    return x


def hh_threshold_after_first(case, x, z, t):
    """The threshold once the first wake (at step t) is kept."""
    hh = case.household()
    hh.add(x[max(0, t - 23):t + 1])
    return hh.thresholds[0]


class Replay(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(7)
        self.T = unit_rows(self.rng, 6)

    def household(self, z_threshold=5.9):
        return N.HouseholdNegatives([self.T], [STATS], z_threshold)

    def test_a_wake_keeps_its_frames_and_that_window_no_longer_wakes(self):
        x = stream_with(self.T, self.rng, [100])
        z = N.template_z([self.T], [STATS], x)
        hh = self.household()
        wakes = N.replay_stream(z, x, hh)
        self.assertEqual(len(wakes), 1)
        t = wakes[0]
        self.assertGreaterEqual(z[0, t], 5.9)
        # the negative is the last min(24, longest template) = 6 frames up to and including the wake's step
        self.assertEqual(len(hh.negatives), 1)
        np.testing.assert_array_equal(hh.negatives[0], x[t - 5:t + 1])
        # the threshold rose above the z that woke: replaying the same frames up to that step wakes no more
        self.assertGreater(hh.thresholds[0], z[0, t])
        self.assertEqual(N.replay_stream(z[:, :t + 1], x[:t + 1], hh, learn=False), [])

    def test_a_repeat_of_the_sound_is_silenced_only_where_the_negative_covers_its_match(self):
        # z_threshold 9.9: only the whole exact match (score <= 0.01) wakes, so the negative holds all of it and
        # the same sound later wakes no more; without the rule it wakes twice
        x = stream_with(self.T, self.rng, [50, 200])
        z = N.template_z([self.T], [STATS], x)
        self.assertEqual(len(N.replay_stream(z, x, self.household(9.9), learn=False)), 2)
        self.assertEqual(len(N.replay_stream(z, x, self.household(9.9))), 1)
        # at 5.9 the first crossing comes before the match is whole: the repeat still wakes, later in the match,
        # where the templates pass the negative's z by 0.5 (docs/household.md)
        off = N.replay_stream(z, x, self.household(), learn=False)
        on = N.replay_stream(z, x, self.household())
        self.assertEqual(len(off), 2)
        self.assertEqual(len(on), 2)
        self.assertEqual(on[0], off[0])
        self.assertGreater(on[1], off[1])
        self.assertLess(z[0, off[1]], hh_threshold_after_first(self, x, z, on[0]))

    def test_the_newest_64_negatives_are_kept(self):
        hh = self.household()
        hh.add(self.T)  # the template itself: z 10, threshold 10.5
        self.assertAlmostEqual(hh.thresholds[0], 10.5, places=6)
        noise = [unit_rows(self.rng, 6) for _ in range(H.MAX_NEGATIVES)]
        for n in noise[:-1]:
            hh.add(n)
        self.assertEqual(len(hh.negatives), H.MAX_NEGATIVES)
        self.assertAlmostEqual(hh.thresholds[0], 10.5, places=6)
        hh.add(noise[-1])  # the 65th: the oldest, the template's, goes, and the threshold falls with it
        self.assertEqual(len(hh.negatives), H.MAX_NEGATIVES)
        np.testing.assert_array_equal(hh.negatives[0], noise[0])
        np.testing.assert_array_equal(hh.negatives[-1], noise[-1])
        self.assertLess(hh.thresholds[0], 10.5)
        self.assertGreaterEqual(hh.thresholds[0], 5.9)

    def test_the_cut_is_the_longest_template_at_most_24(self):
        long = unit_rows(self.rng, 20)
        hh = N.HouseholdNegatives([self.T, long], [STATS, STATS], 5.9)
        hh.add(unit_rows(self.rng, 30))
        self.assertEqual(len(hh.negatives[0]), 20)
        hh = N.HouseholdNegatives([self.T], [STATS], 5.9)
        hh.add(unit_rows(self.rng, 3))  # fewer frames heard since reset: all of them
        self.assertEqual(len(hh.negatives[0]), 3)

    def test_without_learning_the_wakes_are_household_evals_count(self):
        rng = np.random.default_rng(3)
        for _ in range(20):
            z = rng.normal(0, 2.5, (3, 400)).astype(np.float32)
            hh = N.HouseholdNegatives([self.T] * 3, [STATS] * 3, 5.9)
            got = N.replay_stream(z, unit_rows(rng, 400), hh, learn=False)
            self.assertEqual(len(got), HE.count_wakes(z.max(axis=0), 5.9))

    def test_learning_carries_across_streams_in_the_order_given(self):
        a = stream_with(self.T, self.rng, [40], n=120)
        b = stream_with(self.T, self.rng, [10], n=80)
        zs = [N.template_z([self.T], [STATS], s) for s in (a, b)]
        hh = self.household(9.9)
        wakes = N.replay(zs, [a, b], hh, [1, 0])
        self.assertEqual(len(wakes), 1)
        self.assertEqual(wakes[0][1], 1)  # the first stream played woke; the repeat in the other did not
        self.assertAlmostEqual(wakes[0][0], (10 + 5 + 1) * 0.08, places=6)



class WaitForThePeak(unittest.TestCase):
    """--wait W (session 8): a wake pending at its crossing fires once the phrase's best z stops rising, at most W
    steps later, and keeps the frames up to that decision step."""

    def setUp(self):
        self.rng = np.random.default_rng(7)
        self.T = unit_rows(self.rng, 6)

    def run_series(self, series, wait, thresholds=None):
        z = np.atleast_2d(np.asarray(series, np.float32))
        x = unit_rows(self.rng, z.shape[1])
        hh = N.HouseholdNegatives([self.T] * len(z), [STATS] * len(z), 5.9)
        if thresholds is not None:
            hh.thresholds = np.asarray(thresholds, np.float64)
        return N.replay_stream(z, x, hh, wait=wait), hh, x

    def test_a_hand_made_series_fires_at_the_crossing_or_at_the_peak(self):
        series = [0, 1, 2, 6, 7, 8, 3, 2, 1, 0]  # crosses 5.9 at step 3, peaks at step 5
        wakes, hh, x = self.run_series(series, 0)
        self.assertEqual(wakes, [3])
        np.testing.assert_array_equal(hh.negatives[0], x[:4][-6:])
        wakes, hh, x = self.run_series(series, 2)
        self.assertEqual(wakes, [5])  # two steps later, the peak's step: its frames are the negative's last
        np.testing.assert_array_equal(hh.negatives[0], x[0:6])
        self.assertEqual(self.run_series(series, 1)[0], [4])  # W caps the wait while the z still rises
        # a longer wait fires at the first step that is not rising: one past the peak
        self.assertEqual(self.run_series(series, 4)[0], [6])
        # a stream that ends while the wake waits fires at its last step
        self.assertEqual(self.run_series([0, 6, 7, 8], 4)[0], [3])

    def test_each_wake_says_what_it_waited_for(self):
        z = np.array([[0, 1, 2, 6, 7, 8, 3, 2, 1, 0]], np.float32)
        x = unit_rows(self.rng, 10)
        for wait, waited, gain in ((0, 0, 0.0), (1, 1, 1.0), (2, 2, 2.0), (4, 3, 2.0)):
            ev = []
            hh = N.HouseholdNegatives([self.T], [STATS], 5.9)
            N.replay_stream(z, x, hh, learn=False, wait=wait, events=ev)
            self.assertEqual(ev, [{"waited": waited, "gain_at_fire": gain, "to_peak": 2, "gain_to_peak": 2.0}])
        s = N.summarise_events([{"waited": 0, "gain_at_fire": 0.0, "to_peak": 2, "gain_to_peak": 2.0,
                                 "repeat_wakes": True},
                                {"waited": 2, "gain_at_fire": 1.0, "to_peak": 2, "gain_to_peak": 1.0,
                                 "repeat_wakes": False}])
        self.assertEqual((s["wakes"], s["waited_mean_steps"], s["waited_hist"], s["to_peak_hist"]),
                         (2, 1.0, {0: 1, 2: 1}, {2: 2}))
        self.assertEqual((s["gain_to_peak_mean"], s["exact_repeat_would_wake"]), (1.5, 1))

    def test_rising_is_the_best_z_over_templates_not_the_margin(self):
        # template 0's threshold 5.9 is crossed at step 1; its margin falls from step 2 on, while template 1
        # (threshold 9, never reached) carries the phrase's best z on rising to step 4
        z = [[0, 6.0, 6.5, 6.0, 5.0, 1, 0],
             [0, 5.0, 5.0, 7.0, 8.0, 1, 0]]
        self.assertEqual(self.run_series(z, 0, [5.9, 9.0])[0], [1])
        self.assertEqual(self.run_series(z, 4, [5.9, 9.0])[0], [5])

    def test_the_refractory_period_counts_from_the_decision_step(self):
        series = np.zeros(60)
        series[10:13] = [6, 7, 8]  # crossing at 10, peak at 12
        series[36] = 7             # 26 steps after the crossing, 24 after the peak
        hh = N.HouseholdNegatives([self.T], [STATS], 5.9)
        x = unit_rows(self.rng, 60)
        self.assertEqual(N.replay_stream(series[None], x, hh, learn=False, wait=0), [10, 36])
        self.assertEqual(N.replay_stream(series[None], x, hh, learn=False, wait=2), [12])

    def test_an_exact_repeat_no_longer_wakes_once_the_negative_holds_the_peak(self):
        # the repeated sound is template 0 (6 frames); template 1 (9 frames, random) makes the cut 9 frames, so
        # the negative holds the whole match whether the wake fires at its peak or one step past it
        L = unit_rows(self.rng, 9)
        x = stream_with(self.T, self.rng, [50, 200])
        z = N.template_z([self.T, L], [STATS] * 2, x)
        hh = lambda: N.HouseholdNegatives([self.T, L], [STATS] * 2, 5.9)  # noqa: E731
        for wait in (0, 1, 2, 4):
            self.assertEqual(len(N.replay_stream(z, x, hh(), learn=False, wait=wait)), 2, wait)
        on = N.replay_stream(z, x, hh(), wait=0)
        self.assertEqual(len(on), 2)  # the crossing comes before the match is whole: the repeat wakes again
        self.assertLess(z[:, on[0]].max(), z[:, 50:56].max())
        for wait in (1, 2, 4):
            self.assertEqual(len(N.replay_stream(z, x, hh(), wait=wait)), 1, wait)
        # each wake's event says the same of its own sound, from the thresholds its negative left
        for wait, again in ((0, True), (1, False), (4, False)):
            ev = []
            N.replay_stream(z, x, hh(), wait=wait, events=ev)
            self.assertEqual(ev[0]["repeat_wakes"], again, wait)

    def test_past_the_peak_the_cut_can_lose_the_start_of_the_match(self):
        # the cut is the longest template's length: when that template is the sound and the wake fires one step
        # past its peak (W >= 2 here), the negative lacks the match's first frame, its z_T is lower and the
        # repeat still wakes; W = 1 fires at the peak itself and silences it
        x = stream_with(self.T, self.rng, [50, 200])
        z = N.template_z([self.T], [STATS], x)
        peak = 50 + int(np.argmax(z[0, 50:60]))
        hh = N.HouseholdNegatives([self.T], [STATS], 5.9)
        self.assertEqual(N.replay_stream(z, x, hh, wait=1), [peak])
        hh = N.HouseholdNegatives([self.T], [STATS], 5.9)
        wakes = N.replay_stream(z, x, hh, wait=2)
        self.assertEqual(wakes[0], peak + 1)
        self.assertEqual(len(wakes), 2)
        self.assertLess(hh.thresholds[0], z[0, peak] + 0.5)
        # the variant --cut peak ends the negative at the peak's step: the same wake, the whole match kept
        hh = N.HouseholdNegatives([self.T], [STATS], 5.9)
        self.assertEqual(N.replay_stream(z, x, hh, wait=2, cut="peak"), [peak + 1])
        np.testing.assert_array_equal(hh.negatives[0], x[peak - 5:peak + 1])
        self.assertAlmostEqual(hh.thresholds[0], z[0, peak] + 0.5, places=5)
        # so does the variant --cut-frames 9: a cut longer than the template holds the match from one step past it
        hh = N.HouseholdNegatives([self.T], [STATS], 5.9, cut_frames=9)
        self.assertEqual(N.replay_stream(z, x, hh, wait=2), [peak + 1])
        np.testing.assert_array_equal(hh.negatives[0], x[peak - 7:peak + 2])
        self.assertAlmostEqual(hh.thresholds[0], z[0, peak] + 0.5, places=5)
        self.assertEqual(N.HouseholdNegatives([self.T], [STATS], 5.9, cut_frames=40).window, 24)  # the ring
        # the speaker's cut since session 8 (Household.addNegative): twice the longest template and one, at most 24
        hh = N.HouseholdNegatives([self.T], [STATS], 5.9, cut_frames=N.DOUBLE)
        self.assertEqual(hh.window, min(24, 2 * len(self.T) + 1))
        self.assertEqual(N.replay_stream(z, x, hh, wait=2), [peak + 1])
        self.assertAlmostEqual(hh.thresholds[0], z[0, peak] + 0.5, places=5)
        self.assertEqual(N.HouseholdNegatives([np.zeros((12, 96))], [STATS], 5.9, cut_frames=N.DOUBLE).window, 24)

class Rates(unittest.TestCase):
    def test_first_hour_rest_and_per_hour(self):
        r = N.rates([10.0, 3599.0, 3600.0, 9000.0], 2.5 * 3600)
        self.assertEqual(r["first_hour"], 2.0)
        self.assertAlmostEqual(r["rest"], 2 / 1.5)
        self.assertAlmostEqual(r["overall"], 4 / 2.5)
        np.testing.assert_allclose(r["per_hour"], [2.0, 1.0, 2.0])

    def test_halves_keep_streams_whole(self):
        first, second = N.halves([0, 1, 2, 3], [10, 10, 10, 30])
        self.assertEqual((first, second), ([0, 1, 2], [3]))
        self.assertEqual(N.halves([0, 1], [10, 10]), ([0], [1]))


if __name__ == "__main__":
    unittest.main()
