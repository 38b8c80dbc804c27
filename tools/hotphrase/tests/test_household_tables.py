"""household_tables: BENCHMARKS.md's personal-path tables from household_eval's reports (rows, conditions missing
from a report, pooling by rendering weighted by clips, and reports it cannot read named)."""
import contextlib
import io
import json
import os
import tempfile
import unittest

from hotphrase import household_tables as T
from hotphrase.errors import HotPhraseError


def report(word, frontend, missed, conditions, fa=(0.132, 2.074)):
    return {"bank": "negative-bank.hpm", "frontend": frontend,
            "scorers": {"dtw": {"per_word": {word: {}}}},
            "fused": {"z_threshold": 5.9,
                      "personal": {"own_missed_pct": missed, "guests_heard_pct": 72.19,
                                   "test_fa_per_hour_mean": fa[0], "test_fa_per_hour_worst_enrollment": fa[1]},
                      "conditions": {c: {"personal": v} for c, v in conditions.items()}}}


class Tables(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(data if isinstance(data, str) else json.dumps(data))
        return path

    def run_main(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            T.main(list(argv))
        return out.getvalue().splitlines()

    def test_the_speaker_checks_chosen_rows_and_every_cosine(self):
        def row(z, cos, room_snr10, fa):
            return {"z": z, "cos": cos, "missed_pct": {"clean": 0.0, "room-snr10": room_snr10},
                    "guests_heard_pct": 50.0, "test_fa_per_hour_mean": fa, "test_fa_per_hour_worst_enrollment": 2 * fa,
                    "threshold_fa_per_hour_mean": fa}
        r = {"keyword": "jarvis", "zs": [3.0, 5.9], "window_back_seconds": 0.4,
             "rows": [row(3.0, -1.0, 4.5, 100.0), row(3.0, 0.7, 60.0, 0.1), row(5.9, -1.0, 31.3, 0.13),
                      row(5.9, 0.7, 70.0, 0.0)],
             "chosen": [{"z": 3.0, "cos": 0.7, "row": row(3.0, 0.7, 60.0, 0.1)}, {"z": 5.9, "cos": None, "row": None}]}
        lines = self.run_main(self.write("c.json", r), "--speaker-check")
        self.assertEqual(len(lines), 5)
        self.assertEqual(lines[2], "| jarvis | match - 0.4 s | 5.9 | no check (today) | 0.00 % | - | - | 31.30 % | "
                                   "50.00 % | 0.130 (0.260) | 0.130 |")
        self.assertIn("| 3.0 | 0.70 | 0.00 % | - | - | 60.00 % |", lines[3])
        self.assertIn("none meets the target", lines[4])
        r["check_frontend"] = "speex-denoise:-15"
        self.assertIn("| jarvis | match - 0.4 s, speex-denoise:-15 | 5.9 |",
                      self.run_main(self.write("c.json", r), "--speaker-check")[2])
        lines = self.run_main(self.write("c.json", r), "--speaker-check", "--cosines", "0.7")
        self.assertEqual([ln.split(" | ")[3] for ln in lines[2:]], ["no check", "0.70", "no check", "0.70"])

    def test_the_z_sweep_a_row_a_z(self):
        a = report("jarvis", "none", 0.0, {})
        a["fused"]["z_sweep"] = [
            {"z": 3.0, "missed_pct": {"clean": 0.0, "room-snr10": 4.49}, "guests_heard_pct": 99.91,
             "test_fa_per_hour_mean": 112.676, "test_fa_per_hour_worst_enrollment": 262.383, "fa_lower_bound": True},
            {"z": 6.0, "missed_pct": {"clean": 0.0, "room-snr10": 33.33}, "guests_heard_pct": 69.89,
             "test_fa_per_hour_mean": 0.108, "test_fa_per_hour_worst_enrollment": 1.867, "fa_lower_bound": False}]
        lines = self.run_main(self.write("a.json", a), "--z-sweep")
        self.assertEqual(lines[0], "| keyword | z | clean | room-snr10 | guests heard (clean) | FA/h test side |")
        self.assertEqual(lines[2], "| jarvis | 3.0 | 0.00 % | 4.49 % | 99.91 % | >= 112.676 (262.383) |")
        self.assertEqual(lines[3], "| jarvis | 6.0 | 0.00 % | 33.33 % | 69.89 % | 0.108 (1.867) |")
        with self.assertRaises(HotPhraseError) as e:
            T.sweep_rows([report("jarvis", "none", 0.0, {})])
        self.assertIn("--z-sweep", str(e.exception))

    def test_a_row_a_report_and_the_union_of_conditions(self):
        a = report("jarvis", "none", 0.0, {"snr10": {"own_missed_pct": 15.0, "guests_heard_pct": 37.15},
                                           "room": {"own_missed_pct": 4.1, "guests_heard_pct": 48.26}})
        b = report("computer", "speex-denoise:-15", 0.11, {"room": {"own_missed_pct": 28.48, "guests_heard_pct": 13.38}},
                   fa=(0.007, 0.207))
        lines = self.run_main(self.write("a.json", a), self.write("b.json", b))
        self.assertEqual(lines[0], "| keyword | front end | bank | z | clean | snr10 | room | guests heard (clean) | "
                                   "FA/h test side |")
        self.assertEqual(lines[2], "| jarvis | none | negative-bank.hpm | 5.9 | 0.00 % | 15.00 % | 4.10 % | 72.19 % | "
                                   "0.132 (2.074) |")
        # computer has no snr10: a dash, not a zero
        self.assertEqual(lines[3], "| computer | speex-denoise:-15 | negative-bank.hpm | 5.9 | 0.11 % | - | 28.48 % | "
                                   "72.19 % | 0.007 (0.207) |")

    def test_the_oracles_conditions_are_named_in_the_front_end(self):
        r = report("jarvis", "none", 0.0, {"snr10": {"own_missed_pct": 0.0, "guests_heard_pct": 37.15}})
        self.assertEqual(T.frontend(r), "none")
        r["condition_frontends"] = {"snr10": "oracle-bins", "room": "none", "room-snr10": "oracle-bins"}
        self.assertEqual(T.frontend(r), "none (oracle-bins in snr10, room-snr10)")
        lines = self.run_main(self.write("o.json", r))
        self.assertTrue(lines[2].startswith("| jarvis | none (oracle-bins in snr10, room-snr10) |"), lines[2])

    def test_renderings_pool_by_clips(self):
        by = {"rt0.4_1m": {"own_missed_pct": 4.55, "own_clips": 66}, "rt0.4_2m": {"own_missed_pct": 0.0, "own_clips": 62},
              "rt0.4_3m": {"own_missed_pct": 0.0, "own_clips": 66}, "rt0.2_1m": {"own_missed_pct": 50.0, "own_clips": 2}}
        noisy = {"rt0.2_1m+fan": {"own_missed_pct": 10.0, "own_clips": 10},
                 "rt0.4_2m+fan": {"own_missed_pct": 0.0, "own_clips": 30},
                 "rt0.6_1m+babble": {"own_missed_pct": 80.0, "own_clips": 5}}
        r = report("jarvis", "none", 0.0, {"room": {"own_missed_pct": 3.0, "guests_heard_pct": 1.0, "by_rendering": by},
                                           "room-snr10": {"own_missed_pct": 9.0, "guests_heard_pct": 1.0,
                                                          "by_rendering": noisy}})
        room = T.by_rendering(r, "room")
        self.assertEqual(list(room), ["RT60 0.2 s", "RT60 0.4 s"])
        self.assertAlmostEqual(room["RT60 0.4 s"][0], 100 * 3 / 194, places=2)  # 3 of 66 + 62 + 66 clips, not a mean of %
        self.assertEqual(room["RT60 0.4 s"][1], 194)
        self.assertEqual(T.by_rendering(r, "room-snr10"), {"babble": (80.0, 5), "fan": (2.5, 40)})
        lines = self.run_main("--by-rendering", self.write("r.json", r))
        self.assertEqual(lines[2], "| jarvis | none | negative-bank.hpm | 5.9 | 50.0 / 1.5 | 80.0 / 2.5 |")

    def test_the_threshold_side_where_z_was_chosen_there(self):
        a = report("computer", "none", 0.0, {})
        a["fused"]["z_threshold"] = 5.7
        a["scorers"]["dtw"]["threshold_side_fa_per_hour_mean"] = 0.427
        b = report("jarvis", "none", 0.0, {})  # --no-threshold-side: none recorded
        lines = self.run_main(self.write("a.json", a), self.write("b.json", b))
        self.assertIn("| z | FA/h threshold side | clean |", lines[0])
        self.assertTrue(lines[2].startswith("| computer | none | negative-bank.hpm | 5.7 | 0.427 | 0.00 % |"), lines[2])
        self.assertTrue(lines[3].startswith("| jarvis | none | negative-bank.hpm | 5.9 | - | 0.00 % |"), lines[3])

    def test_the_head_folds_one_row_a_fold_and_keyword(self):
        def rep(word, tmpl_folds, pair_folds, guests=False):
            rows = [{"offset": o, "wakes_threshold_side": 1, "wakes_test_folds": f,
                     "missed_pct": {"clean": 0.0, "room-snr10": 20.0 + o},
                     **({"guests_heard_pct": {"clean": 60.0 - o}} if guests else {})}
                    for o, f in zip((0.0, 0.5), pair_folds)]
            return {"keyword": word, "picked_on_the_threshold_side": {
                "templates_wakes_threshold_side": 1, "templates_wakes_test_folds": tmpl_folds,
                "test_fold_hours": [1.0, 1.0], "enrollments": 2, "threshold_side_hours": 1.0, "offsets": rows}}
        a = self.write("a.json", rep("jarvis", [1, 1], [[2, 2], [1, 1]]))
        b = self.write("b.json", rep("computer", [0, 0], [[0, 0], [0, 0]], guests=True))
        lines = self.run_main(a, b, "--head-folds")
        self.assertEqual(len(lines), 8)  # two folds and every side at once, two keywords each
        self.assertEqual(lines[2], "| 0 | 0.50 | 3 (3, 3) | jarvis | 0.500 | 0.500 | 0.00 % | - | - | 20.50 % | - |")
        self.assertIn("| 1 | 0.50 | 3 (3, 3) | computer | 0.000 | 0.000 |", lines[5])
        self.assertTrue(lines[5].endswith("| 59.50 % |"))  # the guests heard at the offset picked
        self.assertIn("| none (all sides) | 0.50 | 4 (4, 4) | jarvis | 0.500 | 0.500 |", lines[6])
        with self.assertRaises(HotPhraseError) as e:
            T.fold_rows([{"keyword": "jarvis", "picked_on_the_threshold_side": {}}])
        self.assertIn("test folds", str(e.exception))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(T.main([a, self.write("cut.json", '{"keyword": "jar'), "--head-folds"]), 1)
        self.assertIn("cut.json", err.getvalue())

    def test_the_z_folds_a_row_a_side_and_keyword(self):
        def rep(word, thr, folds):
            r = report(word, "none", 0.0, {})
            r["fused"]["z_sweep"] = [{"z": z, "missed_pct": {"clean": 0.0, "room-snr10": 30.0},
                                      "guests_heard_pct": 70.0, "wakes_threshold_side": t, "wakes_test_folds": f}
                                     for z, t, f in zip((5.9, 6.0), thr, folds)]
            r["fused"]["z_sweep_sides"] = {"enrollments": 2, "test_fold_hours": [1.0, 1.0],
                                           "threshold_side_hours": 1.0}
            return r
        a = self.write("a.json", rep("jarvis", [1, 0], [[0, 0], [0, 0]]))
        b = self.write("b.json", rep("snowboy", [1, 0], [[1, 3], [0, 0]]))
        lines = self.run_main(a, b, "--z-folds")
        self.assertEqual(len(lines), 2 + 4 * 2)  # four sides, two keywords each
        self.assertEqual(lines[3], "| threshold side | 1.00 | 5.9 (5.9, 5.9) | snowboy | 1.000 (test side) | 0.00 % | "
                                   "- | - | 30.00 % | 70.00 % |")
        self.assertIn("fold 0 held out) | 2.00 | 6.0 (5.9, 6.0) | snowboy | 0.000 (fold 0) |", lines[5])
        self.assertIn("| every side | 3.00 | 6.0 (5.9, 6.0) | jarvis | 0.000 (test side) |", lines[8])
        lines = self.run_main(a, b, "--z-folds", "--target", "2")
        self.assertIn("| threshold side | 1.00 | 5.9 (5.9, 5.9) |", lines[2])
        self.assertIn("| every side | 3.00 | 5.9 (5.9, 5.9) |", lines[8])
        with self.assertRaises(HotPhraseError) as e:
            T.z_fold_rows([report("jarvis", "none", 0.0, {})], 0.5)
        self.assertIn("--z-sweep and --public", str(e.exception))

    def test_what_it_cannot_read_is_named(self):
        bad = self.write("bad.json", "{not json")
        with self.assertRaises(HotPhraseError) as e:
            T._load(bad)
        self.assertIn("bad.json", str(e.exception))
        other = self.write("other.json", {"scorers": {}})
        with self.assertRaises(HotPhraseError) as e:
            T._load(other)
        self.assertIn("fused.personal", str(e.exception))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(T.main([other]), 1)
        self.assertIn("other.json", err.getvalue())


if __name__ == "__main__":
    unittest.main()
