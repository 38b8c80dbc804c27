"""household_head (issue #37, part 2, session 13): the personal head's windows, its positives around the take's last
template frame, the logistic fit, its streaming logits against the windows written out, and the sweep that compares
it with the templates at the same false accepts."""
import unittest

import numpy as np

from hotphrase import household as H
from hotphrase import household_eval as HE
from hotphrase import household_head as HH
from hotphrase.constants import EMB_DIM, SAMPLE_RATE


class Windows(unittest.TestCase):
    def test_each_window_ends_at_its_frame_oldest_first(self):
        x = np.arange(5 * 2, dtype=np.float32).reshape(5, 2)
        w = HH.windows(x, 3)
        self.assertEqual(w.shape, (3, 6))
        np.testing.assert_array_equal(w[0], x[0:3].reshape(-1))
        np.testing.assert_array_equal(w[2], x[2:5].reshape(-1))
        self.assertEqual(HH.windows(x[:2], 3).shape, (0, 6))

    def test_the_takes_last_template_frame_is_span_frames_rule(self):
        t = np.array([H.step_end(k) for k in range(40)])
        pad = int(H.PAD_SECONDS * SAMPLE_RATE)
        span = (0.3, 0.9)
        k = HH.last_frame(t, span, pad, SAMPLE_RATE)
        self.assertLessEqual(t[k] - pad, (0.9 + H.TRIM_AFTER) * SAMPLE_RATE)
        self.assertGreater(t[k + 1] - pad, (0.9 + H.TRIM_AFTER) * SAMPLE_RATE)
        self.assertIsNone(HH.last_frame(t[:1] + 10 ** 9, span, pad, SAMPLE_RATE))

    def test_positives_around_the_end_that_fit(self):
        x = np.arange(10 * 2, dtype=np.float32).reshape(10, 2)
        p = HH.positive_windows(x, 8, 3, (-1, 0, 1, 2))
        self.assertEqual(len(p), 3)  # 7, 8, 9; 10 is past the end
        np.testing.assert_array_equal(p[0], x[5:8].reshape(-1))
        np.testing.assert_array_equal(p[2], x[7:10].reshape(-1))
        self.assertEqual(len(HH.positive_windows(x, 1, 3, (-1, 0))), 0)  # too early for a whole window


class Fit(unittest.TestCase):
    def test_it_separates_what_is_separable_and_needs_both_classes(self):
        rng = np.random.default_rng(0)
        d = 8
        pos = rng.standard_normal((40, d)) + 2.0
        neg = rng.standard_normal((400, d)) - 2.0
        w, b = HH.fit(pos, neg, l2=1e-3)
        self.assertTrue(np.all(pos @ w + b > 0))
        self.assertGreater(np.mean(neg @ w + b < 0), 0.99)
        with self.assertRaises(Exception) as cm:
            HH.fit(pos[:0], neg)
        self.assertIn("positive", str(cm.exception))

    def test_the_gradient_is_the_losss(self):
        # the fit's loss and gradient, taken out by a finite difference through scipy's own check
        from scipy.optimize import check_grad
        from scipy.special import log_expit
        rng = np.random.default_rng(1)
        P, N, l2 = rng.standard_normal((5, 3)), rng.standard_normal((7, 3)), 0.3

        def f(th):
            w, b = th[:3], th[3]
            return -np.mean(log_expit(P @ w + b)) - np.mean(log_expit(-(N @ w + b))) + l2 * w @ w
        w, b = HH.fit(P, N, l2)
        th = np.concatenate([w, [b]]).astype(np.float64)
        # at the optimum the gradient vanishes: f is no lower a little way off in any direction
        for k in range(4):
            for s in (-1e-3, 1e-3):
                e = np.zeros(4)
                e[k] = s
                self.assertLessEqual(f(th), f(th + e) + 1e-9)
        self.assertLess(check_grad(f, lambda t: np.zeros(4), th), 1e-3)


class Scale(unittest.TestCase):
    def test_a_head_is_a_z_against_its_negatives_and_keeps_its_order(self):
        rng = np.random.default_rng(3)
        neg = rng.standard_normal((500, 6))
        w, b = rng.standard_normal(6), 0.7
        w2, b2 = HH.normalised(w, b, neg)
        s = neg @ w2 + b2
        self.assertAlmostEqual(float(s.mean()), 0.0, places=5)
        self.assertAlmostEqual(float(s.std()), 1.0, places=5)
        x = rng.standard_normal((50, 6))
        np.testing.assert_array_equal(np.argsort(x @ w + b), np.argsort(x @ w2 + b2))

    def test_the_grid_follows_the_scores(self):
        g = HH.grid_from([np.array([[1.0, -np.inf, 3.0]]), np.array([2.0, 2.0])], n=4)
        np.testing.assert_array_equal(g, [1.0, 1.75, 2.0, 2.25, 3.0])
        self.assertEqual(len(HH.grid_from([np.array([-np.inf])])), 0)


class Series(unittest.TestCase):
    def test_streaming_logits_are_the_windows_dot_the_weights(self):
        rng = np.random.default_rng(2)
        w = 4
        heads = (rng.standard_normal((3, w * EMB_DIM)).astype(np.float32), np.array([0.5, -1.0, 2.0], np.float32))
        x = rng.standard_normal((20, EMB_DIM)).astype(np.float32)
        s = HH.head_series(heads, x, w)
        self.assertEqual(s.shape, (3, 20))
        self.assertTrue(np.all(np.isneginf(s[:, :w - 1])))
        want = HH.windows(x, w) @ heads[0].T + heads[1]
        np.testing.assert_allclose(s[:, w - 1:], want.T, rtol=1e-4, atol=1e-3)
        self.assertTrue(np.all(np.isneginf(HH.head_series(heads, x[:w - 1], w))))

    def test_streams_from_reset_and_a_gap_between(self):
        got = HH.streams_series(lambda raw: np.asarray(raw, np.float32)[None, :], [[1, 2], [], [3]], 2)
        np.testing.assert_array_equal(got, [[1, 2, -np.inf, -np.inf, 3, -np.inf, -np.inf]])


class Sweep(unittest.TestCase):
    def test_false_accepts_and_misses_over_the_grid_and_the_row_at_a_rate(self):
        series = np.full((2, 200), -np.inf)
        series[0, [0, 100]] = [1.0, 3.0]  # two wakes at threshold 1, one at 2 and 3
        best = {"clean": np.array([[0.5, 2.5, 9.0], [3.0, 3.0, 0.0]])}
        own = [[0, 1], [2]]
        rows = HH.sweep(series, best, own, [1.0, 2.0, 4.0], 1.0, HE.count_wakes)
        self.assertEqual([r["fa_per_hour"] for r in rows], [1.0, 0.5, 0.0])
        self.assertEqual([r["missed_pct"]["clean"] for r in rows], [66.67, 66.67, 100.0])
        self.assertEqual(HH.at_fa(rows, 0.5)["threshold"], 2.0)
        self.assertIsNone(HH.at_fa(rows, -1))


class Offset(unittest.TestCase):
    def test_the_lowest_offset_at_the_templates_rate_and_its_reading(self):
        # threshold side: the templates wake once (at 5.0), the head twice more (at 6.0 and 5.3)
        dt = np.full((1, 100), -np.inf)
        dt[0, 10] = 5.0
        ht = np.full((1, 100), -np.inf)
        ht[0, [40, 80]] = [6.0, 5.3]
        # test side: the head's 6.1 wakes at the offset picked (1.05; at 1.0 the head's 6.0 there would still wake:
        # a wake is z >= threshold)
        ds, hs = np.full((1, 50), -np.inf), np.full((1, 50), -np.inf)
        hs[0, 20] = 6.1
        head_best = {"clean": np.array([[6.2, 4.0]])}
        dtw_best = {"clean": np.array([[3.0, 5.5]])}
        got = HH.offset_rule(ht, dt, hs, ds, head_best, dtw_best, [[0, 1]], 5.0, target=1.0, th_hours=1.0,
                             hours=1.0, count_wakes=HE.count_wakes)
        self.assertAlmostEqual(got["offset"], 1.05)
        self.assertEqual(got["fa_per_hour_threshold_side"], 1.0)
        self.assertEqual(got["fa_per_hour"], 1.0)
        self.assertEqual(got["missed_pct"]["clean"], 0.0)  # clip 0 by the head (6.2 - 1.05), clip 1 by the templates
        self.assertIsNone(HH.offset_rule(ht, dt, hs, ds, head_best, dtw_best, [[0, 1]], 5.0, target=0.0,
                                         th_hours=1.0, hours=1.0, count_wakes=HE.count_wakes))

    def test_the_table_reads_every_offset_and_counts_the_wakes(self):
        dt = np.full((2, 100), -np.inf)
        dt[0, 10] = 5.0
        ht = np.full((2, 100), -np.inf)
        ht[0, 40] = 6.0
        ht[1, 70] = 5.3
        ds, hs = np.full((2, 50), -np.inf), np.full((2, 50), -np.inf)
        hs[1, 20] = 5.2
        head_best = {"clean": np.array([[6.2, 4.0], [5.4, 5.4]])}
        dtw_best = {"clean": np.array([[3.0, 5.5], [3.0, 3.0]])}
        rows = HH.offset_table(ht, dt, hs, ds, head_best, dtw_best, [[0, 1], [0]], 5.0, th_hours=2.0, hours=1.0,
                               offsets=[0.0, 0.5, 1.0, 1.5], count_wakes=HE.count_wakes)
        self.assertEqual([r["offset"] for r in rows], [0.0, 0.5, 1.0, 1.5])
        # threshold side: templates 1, head 6.0 and 5.3 (5.3 passes only at offset 0, 6.0 up to 1.0)
        self.assertEqual([r["wakes_threshold_side"] for r in rows], [3, 2, 2, 1])
        self.assertEqual([r["fa_per_hour_threshold_side"] for r in rows], [0.75, 0.5, 0.5, 0.25])
        self.assertEqual([r["fa_per_hour"] for r in rows], [0.5, 0.0, 0.0, 0.0])  # the head's 5.2, mean of two
        # own clips: e0 [0, 1] (head 6.2, templates 5.5), e1 [0] (head 5.4): e1's is missed from offset 0.5 on
        self.assertEqual([r["missed_pct"]["clean"] for r in rows], [0.0, 33.33, 33.33, 66.67])

    def test_the_table_counts_each_folds_wakes(self):
        dt = np.full((1, 100), -np.inf)
        ht = np.full((1, 100), -np.inf)
        f0, f1 = np.full((1, 60), -np.inf), np.full((1, 60), -np.inf)
        f0[0, 5] = 5.4  # the head on fold 0: passes up to offset 0.4
        f1[0, [3, 40]] = [6.0, 5.0]  # the head on fold 1: 6.0 up to 1.0; the templates' 5.0 (past 2 s) always
        d1 = np.full((1, 60), -np.inf)
        d1[0, 40] = 5.0
        rows = HH.offset_table(ht, dt, np.full((1, 10), -np.inf), np.full((1, 10), -np.inf),
                               {"clean": np.array([[0.0]])}, {"clean": np.array([[6.0]])}, [[0]], 5.0, th_hours=1.0,
                               hours=1.0, offsets=[0.0, 0.5, 1.5], count_wakes=HE.count_wakes,
                               test_folds=[(f0, np.full((1, 60), -np.inf)), (f1, d1)])
        self.assertEqual([r["wakes_test_folds"] for r in rows], [[1, 2], [0, 2], [0, 1]])

    def test_the_table_counts_the_guests_heard(self):
        # one enrollment, clip 0 its own, clips 1-3 guests: the templates hear guest 1 (5.2), the head guest 2 (6.0)
        # and guest 3 (5.3, only at offset 0)
        head_best = {"clean": np.array([[6.0, 0.0, 6.0, 5.3]])}
        dtw_best = {"clean": np.array([[0.0, 5.2, 0.0, 0.0]])}
        none = np.full((1, 10), -np.inf)
        rows = HH.offset_table(none, none, none, none, head_best, dtw_best, [[0]], 5.0, th_hours=1.0, hours=1.0,
                               offsets=[0.0, 0.5, 1.5], count_wakes=HE.count_wakes, guest_cols=[[1, 2, 3]])
        self.assertEqual([r["guests_heard_pct"]["clean"] for r in rows], [100.0, 66.67, 33.33])
        self.assertEqual(HH.guests_heard(dtw_best, [[1, 2, 3]], 5.0), {"clean": 33.33})

    def test_stream_folds_cut_whole_streams_in_turn(self):
        # three streams of 2, 0 and 3 steps, and 4, laid out as streams_series does with a gap of 1
        s = np.array([[1, 1, 9, 3, 3, 3, 9, 4, 4, 4, 4, 9]], np.float32)
        (a, b), steps = HH.stream_folds(s, [2, 0, 3, 4], gap=1)
        np.testing.assert_array_equal(a, [[1, 1, 9, 4, 4, 4, 4, 9]])
        np.testing.assert_array_equal(b, [[3, 3, 3, 9]])
        self.assertEqual(steps, [6, 3])
        with self.assertRaises(ValueError):
            HH.stream_folds(s, [2, 3], gap=1)

    def test_the_pooled_pick_holds_each_fold_out_in_turn(self):
        def held(th, folds, tmpl_th, tmpl_folds, miss):
            return {"templates_wakes_threshold_side": tmpl_th, "templates_wakes_test_folds": tmpl_folds,
                    "test_fold_hours": [2.0, 2.0], "enrollments": 10, "threshold_side_hours": 1.0,
                    "offsets": [{"offset": o, "wakes_threshold_side": t, "wakes_test_folds": f,
                                 "missed_pct": {"clean": m}} for o, t, f, m in zip((0.0, 0.5, 1.0), th, folds, miss)]}
        # keyword a: templates 2 there + folds [1, 1]; the pair one more at 0.5 on fold 1 only, none more at 1.0
        a = held([4, 2, 2], [[3, 1], [1, 2], [1, 1]], 2, [1, 1], [1.0, 2.0, 3.0])
        b = held([1, 1, 1], [[0, 0], [0, 0], [0, 0]], 1, [0, 0], [5.0, 6.0, 7.0])
        p0, p1, p_all = HH.pooled_fold_pick([a, b])
        # fold 0 held out: there = threshold + fold 1; templates 2+1 + 1+0 = 4; offset 0.0: 4+1 + 1 = 6, 0.5: 2+2 + 1
        # = 5, 1.0: 2+1 + 1 = 4 -> 1.0
        self.assertEqual((p0["offset"], p0["wakes_there"], p0["templates_wakes_there"]), (1.0, 4, 4))
        self.assertEqual(p0["keywords"][0], {"fa_per_hour_fold": 0.05, "templates_fa_per_hour_fold": 0.05,
                                             "missed_pct": {"clean": 3.0}})
        # fold 1 held out: templates 2+1 + 1+0 = 4; 0.0: 4+3 + 1 = 8, 0.5: 2+1 + 1 = 4 -> 0.5, read on fold 1
        self.assertEqual((p1["offset"], p1["wakes_there"]), (0.5, 4))
        self.assertEqual(p1["keywords"][0]["fa_per_hour_fold"], 0.1)
        self.assertEqual(p1["keywords"][1]["missed_pct"], {"clean": 6.0})
        # every side at once: templates 2+1+1 + 1 = 5; 0.0: 4+3+1 + 1 = 9, 0.5: 2+1+2 + 1 = 6, 1.0: 2+1+1 + 1 = 5
        self.assertEqual((p_all["fold"], p_all["offset"], p_all["wakes_there"]), (None, 1.0, 5))
        self.assertEqual(p_all["keywords"][0]["fa_per_hour_fold"], 0.05)  # 2 wakes / 10 enrollments / 4 h
        # 0.05 an hour more allowed: 10 enrollments x (1 + 2) h x 2 keywords = 3 wakes more with a fold held out
        # (fold 0: 6 <= 4 + 3 at 0.0; fold 1: 8 > 7 at 0.0, 4 at 0.5), 5 more on every side (9 <= 5 + 5 at 0.0)
        q0, q1, q_all = HH.pooled_fold_pick([a, b], extra_per_hour=0.05)
        self.assertEqual((q0["offset"], q0["wakes_allowed_there"]), (0.0, 7))
        self.assertEqual((q1["offset"], q_all["offset"], q_all["wakes_allowed_there"]), (0.5, 0.0, 10))
        # no offset low enough: none picked
        c = held([9, 9, 9], [[9, 9], [9, 9], [9, 9]], 0, [0, 0], [0.0, 0.0, 0.0])
        self.assertIsNone(HH.pooled_fold_pick([c])[0]["offset"])


try:
    import soundfile  # noqa: F401
except ImportError:
    soundfile = None


@unittest.skipUnless(soundfile, "soundfile (the measurement venv) writes the takes")
class SwiftHeads(unittest.TestCase):
    def test_each_enrollments_takes_and_the_voices_go_to_the_bench_and_its_head_comes_back(self):
        import json
        import os
        import stat
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            bench = os.path.join(d, "bench")
            log = os.path.join(d, "calls")
            # a stand-in for hound-speaker-bench: records its arguments, writes a head of the takes' count
            with open(bench, "w") as f:
                f.write("#!/usr/bin/env python3\nimport json, sys\n"
                        f"open({log!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
                        "a = sys.argv[1:]; takes = [x for x in a[2:a.index('--model')]]\n"
                        "json.dump({'weights': [float(len(takes))] * 1152, 'bias': -1.5, 'cpu_seconds': 0.5},"
                        " open(a[1], 'w'))\n")
            os.chmod(bench, stat.S_IRWXU)
            metas = [{"take_audio": [np.zeros(1600, np.int16)] * 3}, {"take_audio": [np.ones(800, np.int16)] * 2}]
            W_, b_ = HH.swift_heads(bench, metas, "m.hpm", "b.hpm", "none", [np.zeros(400, np.float32)])
            self.assertEqual([float(w[0]) for w in W_], [3.0, 2.0])
            self.assertEqual(b_, [-1.5, -1.5])
            calls = [json.loads(line) for line in open(log)]
            self.assertEqual([c[0] for c in calls], ["head", "head"])
            self.assertEqual(calls[0][calls[0].index("--renderings") + 1], "none")
            self.assertEqual(len(calls[1]) - calls[1].index("--babble"), 2)  # one voice
            with open(bench, "w") as f:
                f.write("#!/bin/sh\necho 'no such model' >&2\nexit 66\n")
            with self.assertRaises(HE.HotPhraseError) as e:
                HH.swift_heads(bench, metas, "m.hpm", "b.hpm", "measured", [])
            self.assertIn("no such model", str(e.exception))
            self.assertIn("enrollment 0", str(e.exception))


class Engines(unittest.TestCase):
    def test_only_the_named_engines_in_order_and_too_few_is_an_error_naming_the_file(self):
        utt = [np.full(3, k, np.float32) for k in range(HH.SENTENCES + 2)]
        meta = [("espeak:en-us+m3" if k % 2 else "flite:slt") + f"|text {k}|1.00|1.00" for k in range(len(utt))]
        self.assertEqual(len(HH.of_engines(utt, meta, None, "s.npz")), len(utt))
        with self.assertRaises(HE.HotPhraseError) as e:
            HH.of_engines(utt, meta, "espeak", "s.npz")
        self.assertIn("s.npz", str(e.exception))
        self.assertIn("151 sentences of espeak", str(e.exception))
        got = HH.of_engines(utt * 2, meta * 2, "espeak, festival", "s.npz")
        self.assertEqual(len(got), 2 * (HH.SENTENCES // 2 + 1))
        self.assertEqual([float(u[0]) for u in got[:3]], [1.0, 3.0, 5.0])


if __name__ == "__main__":
    unittest.main()
