"""household_eval's comparison of the generic model, the personal scorer and the two fused (issue #37, "Honest
evaluation"): the fused decision, the pooled clip outcomes, the head's threshold and scores' alignment with the
personal scorer's steps, and the clip caches. numpy only."""
import json
import os
import tempfile
import unittest

import numpy as np

from hotphrase import household_eval as HE
from hotphrase.constants import EMB_DIM
from hotphrase.errors import HotPhraseError


def a_stream_holding_a_take(seed):
    """A random bank, one enrollment of random takes, 200 frames of other speech and the same with the first take
    inside it at frame 100: (scorers, [enrollment], quiet, holding). Shared with test_speaker_check."""
    rng = np.random.default_rng(seed)
    bank = [rng.standard_normal((60, EMB_DIM)).astype(np.float32) for _ in range(8)]
    scorers = HE.Scorers(np.zeros(EMB_DIM), bank)
    takes = [rng.standard_normal((12, EMB_DIM)).astype(np.float32) for _ in range(HE.TAKES)]
    enr = [scorers.enrol(takes)]
    quiet = rng.standard_normal((200, EMB_DIM)).astype(np.float32)
    return scorers, enr, quiet, np.concatenate([quiet[:100], takes[0], quiet[100:]])


class Fusion(unittest.TestCase):
    def test_either_fires(self):
        z = np.array([-np.inf, 6.0, 5.0, 1.0, 7.0])
        g = np.array([-np.inf, 0.1, 0.8, 0.2, 0.9])
        np.testing.assert_array_equal(HE.fused_fires(z, 5.9, g, 0.7), [0, 1, 1, 0, 1])

    def test_fused_wakes_share_one_refractory_period(self):
        # personal fires at step 0, generic at step 10 (inside 2 s), then generic alone at step 40
        n = 60
        z = np.full(n, -np.inf)
        g = np.zeros(n)
        z[0] = 9.0
        g[10] = 0.95
        g[40] = 0.95
        fire = HE.fused_fires(z, 5.9, g, 0.7)
        self.assertEqual(HE.count_wakes(fire, 0.5), 2)
        self.assertEqual(HE.count_wakes(g, 0.7), 2)
        self.assertEqual(HE.count_wakes(z, 5.9), 1)


class FalseAccepts(unittest.TestCase):
    def test_a_stream_holding_a_take_wakes_once_and_rates_are_per_hour(self):
        scorers, enr, quiet, holding = a_stream_holding_a_take(seed=0)
        p, g, f = HE.false_accepts(enr, scorers, [quiet], 5.9, [])
        self.assertEqual((p.tolist(), g, f), ([0.0], {}, {}))
        p, _, _ = HE.false_accepts(enr, scorers, [quiet, holding], 5.9, [])
        self.assertEqual(p.tolist(), [1.0])
        r = HE.fa_rates(np.array([1.0, 3.0]), {"h": 2}, {"h": np.array([2.0, 4.0])}, 2.0)
        self.assertEqual(r["personal"], {"test_fa_per_hour_mean": 1.0, "test_fa_per_hour_worst_enrollment": 1.5})
        self.assertEqual(r["h"]["generic"], {"test_fa_per_hour": 1.0})
        self.assertEqual(r["h"]["fused"], {"test_fa_per_hour_mean": 1.5, "test_fa_per_hour_worst_enrollment": 2.0})

    def test_missing_rendering_is_named(self):
        with self.assertRaises(HotPhraseError) as e:
            HE.load_streams(["/nonexistent/e1_eval_extra_x.npz"])
        self.assertIn("e1_eval_extra_x.npz", str(e.exception))


class ClipOutcomes(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(HE.clip_outcomes([0.1, 0.7, 0.9], [0.69, 0.7], 0.7), [1, 3, 1, 2])

    def test_no_guests(self):
        self.assertEqual(HE.clip_outcomes([6.0], [], 5.9), [0, 1, 0, 0])


class GenericHead(unittest.TestCase):
    def head(self, frames=3, smoothing=1):
        # one dense layer summing the window's first numbers, then a sigmoid
        w = np.zeros((frames * 96, 1), np.float32)
        w[::96, 0] = 1.0
        head = {"frames": frames, "smoothing": smoothing,
                "layers": [{"type": "dense", "w": "w", "b": "b"}, {"type": "sigmoid"}]}
        return head, {"w": w, "b": np.zeros(1, np.float32)}

    def test_scores_line_up_with_the_personal_steps(self):
        head, arrays = self.head(frames=3)
        raw = np.zeros((6, 96), np.float32)
        raw[4, 0] = 10.0  # the windows ending at steps 4 and 5 hold it
        g = HE.generic_series(head, arrays, raw)
        self.assertEqual(len(g), 6)
        self.assertTrue(np.all(np.isneginf(g[:2])))
        np.testing.assert_allclose(g[2:], [0.5, 0.5, 1 / (1 + np.exp(-10.0)), 1 / (1 + np.exp(-10.0))], rtol=1e-6)

    def test_short_stream(self):
        head, arrays = self.head(frames=3)
        self.assertTrue(np.all(np.isneginf(HE.generic_series(head, arrays, np.zeros((2, 96), np.float32)))))

    def test_threshold_from_eval_json(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(HotPhraseError) as cm:
                HE.generic_threshold(d)
            self.assertIn("eval.json", str(cm.exception))
            with open(os.path.join(d, "eval.json"), "w") as f:
                json.dump({"negatives": {}}, f)
            with self.assertRaises(HotPhraseError) as cm:
                HE.generic_threshold(d)
            self.assertIn("threshold_at_0.5_fa_per_hour", str(cm.exception))
            with open(os.path.join(d, "eval.json"), "w") as f:
                json.dump({"negatives": {"threshold_at_0.5_fa_per_hour": 0.697}}, f)
            self.assertEqual(HE.generic_threshold(d), 0.697)


class ClipCache(unittest.TestCase):
    def test_sorted_names_and_count(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "e1_eval_real_w.npz")
            emb = np.arange(5 * 96, dtype=np.float16).reshape(5, 96)
            np.savez(p, emb=emb, offsets=np.array([0, 2, 5]))
            got = HE.load_clips_npz(p, {"b.wav": 1, "a.wav": 0})
            np.testing.assert_array_equal(got["a.wav"], emb[:2])
            np.testing.assert_array_equal(got["b.wav"], emb[2:])
            with self.assertRaises(HotPhraseError) as cm:
                HE.load_clips_npz(p, {"a.wav": 0})
            self.assertIn("2 clips", str(cm.exception))
            with self.assertRaises(HotPhraseError):
                HE.load_clips_npz(os.path.join(d, "none.npz"), {"a.wav": 0})


class StreamCache(unittest.TestCase):
    def test_a_missing_folder_is_made_and_the_second_read_is_the_cache(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "not-yet", "neg.npz")
            made = []
            make = lambda: (made.append(1), ([np.ones((3, 2), np.float32)], ["a"], 1.5))[1]  # noqa: E731
            first = HE.cached(path, make)
            second = HE.cached(path, make)
            self.assertEqual(len(made), 1)
            self.assertEqual(second[1:], (["a"], 1.5))
            np.testing.assert_array_equal(second[0][0], first[0][0])


class ZSweep(unittest.TestCase):
    def test_grid(self):
        self.assertEqual(HE.parse_z_sweep("2:6:0.5"), [2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0])
        for bad in ("2:6", "6:2:0.5", "2:6:0", "a:b:c"):
            with self.assertRaises(HotPhraseError):
                HE.parse_z_sweep(bad)

    def test_count_wakes_is_the_greedy_refractory_count(self):
        rng = np.random.default_rng(3)
        for _ in range(50):
            row = rng.standard_normal(400)
            for th in (-1.0, 0.0, 1.5):
                n, last = 0, -10 ** 9
                for i in np.flatnonzero(row >= th):
                    if i - last >= HE.REFRACTORY_STEPS:
                        n, last = n + 1, i
                self.assertEqual(HE.count_wakes(row, th), n)

    def test_misses_guests_and_false_accepts_at_each_z(self):
        # two enrollments over three clips; enrollment 0 owns a, b (c a guest), enrollment 1 owns c
        meta = [{"own": ["a", "b"], "guests": ["c"]}, {"own": ["c"], "guests": ["a", "b"]}]
        col = {"a": 0, "b": 1, "c": 2}
        clean = np.array([[6.0, 3.0, 4.0], [2.0, 5.0, 7.0]])
        room = np.array([[2.5, 1.0, 0.0], [0.0, 0.0, 3.5]])
        wakes = np.array([[10, 2, 0], [30, 4, 1]], float)
        rows = HE.sweep_rows(meta, col, {"clean": clean, "room": room}, wakes, 2.0, [2.0, 3.0, 6.5])
        self.assertEqual([r["z"] for r in rows], [2.0, 3.0, 6.5])
        # z 2: clean all 3 own heard; room own a 2.5 heard, b 1.0 missed, c 3.5 heard
        self.assertEqual(rows[0]["missed_pct"], {"clean": 0.0, "room": round(100 / 3, 2)})
        # z 3: clean b (3.0) heard (>=), room a and b missed
        self.assertEqual(rows[1]["missed_pct"], {"clean": 0.0, "room": round(200 / 3, 2)})
        # z 6.5: clean a 6.0 and b 3.0 missed, c 7.0 heard
        self.assertEqual(rows[2]["missed_pct"], {"clean": round(200 / 3, 2), "room": 100.0})
        # guests, clean: enrollment 0 hears c at 4.0, enrollment 1 hears a 2.0 and b 5.0
        self.assertEqual([r["guests_heard_pct"] for r in rows], [100.0, round(200 / 3, 2), 0.0])
        self.assertEqual((rows[0]["test_fa_per_hour_mean"], rows[0]["test_fa_per_hour_worst_enrollment"]),
                         (10.0, 15.0))
        self.assertEqual((rows[2]["test_fa_per_hour_mean"], rows[2]["test_fa_per_hour_worst_enrollment"]),
                         (0.25, 0.5))
        self.assertFalse(rows[0]["fa_lower_bound"])
        wakes[0, 0] = 10.4  # count_wakes' bound for a stream with more than DENSE steps above z
        self.assertTrue(HE.sweep_rows(meta, col, {"clean": clean}, wakes, 2.0, [2.0, 3.0, 6.5])[0]["fa_lower_bound"])

    def test_the_sweep_counts_the_same_wakes_as_the_threshold(self):
        scorers, enr, quiet, holding = a_stream_holding_a_take(seed=1)
        grid = [-2.0, 5.9, 1e9]
        counts = np.zeros((1, 3))
        p, _, _ = HE.false_accepts(enr, scorers, [quiet, holding], 5.9, [], (grid, counts))
        self.assertEqual(counts[0, 1], p[0])
        self.assertEqual(counts[0, 2], 0)
        self.assertGreater(counts[0, 0], counts[0, 1])



class ZFolds(unittest.TestCase):
    """Session 17: the z sweep's wakes on the test side's folds and the threshold side, and the bank's z picked on
    larger sides (pooled_z_pick)."""

    def test_each_stream_counts_in_its_fold(self):
        scorers, enr, quiet, holding = a_stream_holding_a_take(seed=1)
        grid = [-2.0, 5.9, 1e9]
        counts, folds = np.zeros((1, 3)), np.zeros((2, 1, 3))
        # the empty stream is no stream: holding is the second stream heard, in fold 1
        HE.false_accepts(enr, scorers, [quiet, np.zeros((0, EMB_DIM), np.float32), holding], 5.9, [], (grid, counts),
                         folds)
        np.testing.assert_array_equal(folds.sum(axis=0), counts)
        self.assertEqual(folds[0, 0, 1], 0)  # the quiet stream holds no take
        self.assertEqual(folds[1, 0, 1], counts[0, 1])
        self.assertGreater(counts[0, 1], 0)
        self.assertGreater(folds[0, 0, 0], 0)

    def test_the_sweep_rows_carry_the_folds_and_the_threshold_side(self):
        meta = [{"own": ["a"], "guests": []}, {"own": ["a"], "guests": []}]
        pb = {"clean": np.array([[6.0], [6.0]])}
        wakes = np.array([[3, 1], [2, 0]], float)
        folds = np.array([[[1, 0], [2, 0]], [[2, 1], [0, 0]]], float)
        thr = np.array([[4, 2], [0, 1]], float)
        rows = HE.sweep_rows(meta, {"a": 0}, pb, wakes, 1.0, [5.9, 6.5], folds, thr)
        self.assertEqual([r["wakes_test_folds"] for r in rows], [[3.0, 2.0], [0.0, 1.0]])
        self.assertEqual([r["wakes_threshold_side"] for r in rows], [4.0, 3.0])
        self.assertNotIn("wakes_test_folds", HE.sweep_rows(meta, {"a": 0}, pb, wakes, 1.0, [5.9, 6.5])[0])

    @staticmethod
    def fused(thr, folds, enrollments=2):
        """A keyword's fused report on the grid 5.9, 6.0, 6.1: 1 h threshold side, two folds of 1 h."""
        return {"z_sweep": [{"z": z, "missed_pct": {"clean": 0.0, "room-snr10": 30.0 + 10 * (z - 5.9)},
                             "guests_heard_pct": 70.0, "wakes_threshold_side": t, "wakes_test_folds": f}
                            for z, t, f in zip((5.9, 6.0, 6.1), thr, folds)],
                "z_sweep_sides": {"enrollments": enrollments, "test_fold_hours": [1.0, 1.0],
                                  "threshold_side_hours": 1.0}}

    def test_the_bank_z_picked_on_each_side(self):
        quiet = self.fused([1, 1, 0], [[0, 0], [0, 0], [0, 0]])
        loud = self.fused([1, 0, 0], [[1, 3], [0, 2], [0, 0]])
        rows = HE.pooled_z_pick([quiet, loud])
        self.assertEqual([r["picked_on"] for r in rows], ["threshold", 0, 1, "every"])
        # the threshold side alone: 1 wake / 2 enrollments / 1 h = 0.5 for both at 5.9 (at most the target)
        self.assertEqual((rows[0]["z"], rows[0]["own_z"]), (5.9, [5.9, 5.9]))
        self.assertEqual([k["fa_per_hour_read"] for k in rows[0]["keywords"]], [0.0, 1.0])  # 4 / 2 / 2 h
        # fold 0 held out: loud on the threshold side and fold 1 is (1 + 3) / 2 / 2 h = 1.0 at 5.9, 0.5 at 6.0
        self.assertEqual((rows[1]["z"], rows[1]["own_z"], rows[1]["hours_there"]), (6.0, [5.9, 6.0], 2.0))
        self.assertEqual(rows[1]["read_on"], "fold 0")
        self.assertEqual(rows[1]["keywords"][1]["fa_per_hour_read"], 0.0)
        self.assertAlmostEqual(rows[1]["keywords"][1]["missed_pct"]["room-snr10"], 31.0)
        # fold 1 held out: (1 + 1) / 2 / 2 h = 0.5 at 5.9; read on fold 1, 3 / 2 / 1 h
        self.assertEqual((rows[2]["z"], rows[2]["keywords"][1]["fa_per_hour_read"]), (5.9, 1.5))
        # every side: (1 + 1 + 3) / 2 / 3 h > 0.5 at 5.9, 2 / 2 / 3 h at 6.0; read on the test side, 2 / 2 / 2 h
        self.assertEqual((rows[3]["z"], rows[3]["keywords"][1]["fa_per_hour_read"]), (6.0, 0.5))

    def test_a_keyword_that_never_reaches_the_target_leaves_no_z(self):
        never = self.fused([9, 9, 9], [[0, 0], [0, 0], [0, 0]])
        rows = HE.pooled_z_pick([self.fused([0, 0, 0], [[0, 0]] * 3), never])
        self.assertTrue(all(r["z"] is None and r["own_z"][1] is None for r in rows))
        self.assertEqual(rows[0]["own_z"][0], 5.9)

    def test_the_z_picked_on_every_side_is_written_into_the_bank(self):
        from hotphrase import hpmfile
        d = tempfile.mkdtemp()
        bank = os.path.join(d, "bank.hpm")
        hpmfile.write(bank, {"format": 3, "z_threshold": 5.9}, b"\0" * 8)
        paths = []
        for word, f in (("quiet", self.fused([1, 1, 0], [[0, 0], [0, 0], [0, 0]])),
                        ("loud", self.fused([1, 0, 0], [[1, 3], [0, 2], [0, 0]]))):
            paths.append(os.path.join(d, word + ".json"))
            with open(paths[-1], "w") as fh:
                json.dump({"scorers": {"dtw": {"per_word": {word: {}}}}, "fused": f}, fh)
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            HE.main(["--bank", bank, "--merge-z-folds", *paths])
        self.assertIn("z_threshold 6.0", out.getvalue())
        header, payload = hpmfile.split(bank)
        self.assertEqual(header["z_threshold"], 6.0)
        self.assertEqual(header["z_threshold_measured"]["keywords_own_z"], {"quiet": 5.9, "loud": 6.0})
        self.assertEqual(header["z_threshold_measured"]["test_side_hours"], 2.0)
        self.assertEqual(header["z_threshold_measured"]["z_grid"], [5.9, 6.1])
        self.assertEqual(payload, b"\0" * 8)
        with open(paths[1], "w") as fh:
            json.dump({"scorers": {"dtw": {"per_word": {"loud": {}}}},
                        "fused": self.fused([9, 9, 9], [[0, 0]] * 3)}, fh)
        with self.assertRaises(HotPhraseError) as e:
            HE.merge_z_folds(bank, paths)
        self.assertIn("never reaches", str(e.exception))
        self.assertEqual(hpmfile.split(bank)[0]["z_threshold"], 6.0)  # left as it was

    def test_what_it_cannot_pick_on_is_named(self):
        a = self.fused([0, 0, 0], [[0, 0]] * 3)
        b = self.fused([0, 0, 0], [[0, 0]] * 3)
        b["z_sweep"] = b["z_sweep"][:2]
        with self.assertRaises(HotPhraseError) as e:
            HE.pooled_z_pick([a, b])
        self.assertIn("grids differ", str(e.exception))
        a["z_sweep_sides"]["threshold_side_hours"] = None
        with self.assertRaises(HotPhraseError) as e:
            HE.pooled_z_pick([a])
        self.assertIn("--public", str(e.exception))


class NoTestSide(unittest.TestCase):
    """--no-test-side (session 12): misses only, and only with what needs no negatives."""

    def run_main(self, argv):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = HE.main(["--bank", "/nonexistent.hpm"] + argv)
        return rc, err.getvalue()

    def test_it_goes_only_with_bank_z_and_no_threshold_side(self):
        for argv in (["--no-test-side"], ["--no-test-side", "--no-threshold-side", "--test-npz", "t.npz"],
                     ["--no-test-side", "--no-threshold-side", "--generic", "g"],
                     ["--no-test-side", "--no-threshold-side", "--z-sweep", "5:6:0.1"]):
            rc, err = self.run_main(argv)
            self.assertEqual(rc, 1, argv)
            self.assertIn("--no-test-side: goes with --bank-z and --no-threshold-side", err, argv)
        rc, err = self.run_main(["--no-threshold-side", "--no-test-side"])  # accepted; then wants --bank-z
        self.assertEqual(rc, 1)
        self.assertIn("--no-threshold-side: needs --bank-z", err)
        rc, err = self.run_main(["--no-threshold-side", "--no-test-side", "--bank-z"])  # accepted: the bank is read
        self.assertEqual(rc, 1)
        self.assertIn("/nonexistent.hpm", err)


class OneKeyword(unittest.TestCase):
    def test_one_keywords_speakers_or_an_error_naming_them(self):
        import json
        import os
        import tempfile
        from hotphrase.errors import HotPhraseError
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "s.json")
            with open(p, "w") as f:
                json.dump({"keywords": {"jarvis": {"a.wav": 1, "b.wav": 2}}}, f)
            self.assertEqual(HE.one_keyword(p), ("jarvis", {"a.wav": 1, "b.wav": 2}))
            with open(p, "w") as f:
                json.dump({"keywords": {"jarvis": {}, "computer": {}}}, f)
            with self.assertRaises(HotPhraseError) as cm:
                HE.one_keyword(p)
            self.assertIn("['computer', 'jarvis']", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
