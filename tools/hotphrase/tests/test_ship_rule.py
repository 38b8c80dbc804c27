"""hotphrase.ship_rule: the ship rule of issue #37 on made-up numbers."""
import json
import os
import tempfile
import unittest

from hotphrase import ship_rule as S
from hotphrase.errors import HotPhraseError

V9 = {"a": (0.50, 0.60), "b": (0.40,)}  # v9: mean over keywords 0.475, worst seeds 0.60 and 0.40


def checks(v):
    return {name: ok for name, ok, _ in v["checks"]}


class Verdict(unittest.TestCase):
    def test_better_on_average_every_keyword_and_quiet_enough_ships(self):
        v = S.verdict({"a": [0.3, 0.4, 0.5], "b": [0.3, 0.35, 0.4]}, 1.0, v9_missed=V9, v9_wakes=1.6)
        self.assertTrue(v["ship"])

    def test_one_keyword_worse_than_v9s_worst_seed_blocks_it(self):
        # far better on average, but b (0.45) is worse than v9's only seed there (0.40)
        v = S.verdict({"a": [0.1, 0.1, 0.1], "b": [0.45, 0.45, 0.45]}, 1.0, v9_missed=V9, v9_wakes=1.6)
        self.assertEqual(checks(v), {"seeds": True, "average": True, "worst": False, "false wakes": True})
        self.assertFalse(v["ship"])

    def test_more_false_wakes_than_v9_blocks_it(self):
        v = S.verdict({"a": [0.3] * 3, "b": [0.3] * 3}, 1.7, v9_missed=V9, v9_wakes=1.6)
        self.assertFalse(checks(v)["false wakes"])
        self.assertFalse(v["ship"])

    def test_fewer_than_three_seeds_or_no_wake_count_is_not_enough(self):
        v = S.verdict({"a": [0.3, 0.3], "b": [0.3] * 3}, 1.0, v9_missed=V9, v9_wakes=1.6)
        self.assertFalse(checks(v)["seeds"])
        self.assertFalse(v["ship"])
        v = S.verdict({"a": [0.3] * 3, "b": [0.3] * 3}, None, v9_missed=V9, v9_wakes=1.6)
        self.assertIsNone(checks(v)["false wakes"])
        self.assertFalse(v["ship"])

    def test_a_keyword_not_measured_is_not_counted_as_met(self):
        v = S.verdict({"a": [0.3] * 3}, 1.0, v9_missed=V9, v9_wakes=1.6)
        self.assertIsNone(checks(v)["average"])
        self.assertIsNone(checks(v)["worst"])
        self.assertFalse(v["ship"])


class Reports(unittest.TestCase):
    def test_reads_each_seeds_recipe_check(self):
        with tempfile.TemporaryDirectory() as d:
            for n, m in ((1, 0.25), (2, 0.5)):
                os.makedirs(os.path.join(d, "jarvis", f"e1-pub-s{n}"))
                with open(os.path.join(d, "jarvis", f"e1-pub-s{n}", "eval.json"), "w") as out_file:
                    json.dump({"real_recordings": {"missed_at_0.5_fa_per_hour": m,
                                                   "missed_at_0.1_fa_per_hour": m + 0.125}}, out_file)
            self.assertEqual(S.keyword_misses(d, "e1-pub"), {"jarvis": {1: (0.25, 0.375), 2: (0.5, 0.625)}})

    def test_a_report_without_the_recipe_check_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "snowboy", "e1-pub-s1"))
            path = os.path.join(d, "snowboy", "e1-pub-s1", "eval.json")
            with open(path, "w") as out_file:
                json.dump({"negatives": {}}, out_file)
            with self.assertRaises(HotPhraseError) as e:
                S.keyword_misses(d, "e1-pub")
            self.assertIn(path, str(e.exception))

    def test_wakes_at_the_heads_own_threshold(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "head.json"), "w") as out_file:
                json.dump({"threshold": 0.8}, out_file)
            with open(os.path.join(d, "wakes-train.json"), "w") as out_file:
                json.dump({"total_false_wakes": {"0.7": 9, "0.8": 4}, "total_hours": 6.0}, out_file)
            self.assertEqual(S.wakes(d), (0.8, {"train": (4, 6.0)}))
            with open(os.path.join(d, "wakes-eval.json"), "w") as out_file:
                json.dump({"total_false_wakes": {"0.7": 9}, "total_hours": 4.0}, out_file)
            with self.assertRaises(HotPhraseError):
                S.wakes(d)


if __name__ == "__main__":
    unittest.main()
