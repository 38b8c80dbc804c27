"""hotphrase.set_threshold: a head's default threshold taken from its own evaluation report."""
import json
import os
import tempfile
import unittest

from hotphrase import set_threshold as S
from hotphrase.errors import HotPhraseError


def head_dir(d, negatives):
    with open(os.path.join(d, "head.json"), "w") as f:
        json.dump({"phrase": "OK Hound", "threshold": 0.9, "frames": 16}, f)
    with open(os.path.join(d, "eval.json"), "w") as f:
        json.dump({"negatives": negatives}, f)


def read_head(d):
    with open(os.path.join(d, "head.json")) as f:
        return json.load(f)


class SetThreshold(unittest.TestCase):
    def test_writes_the_chosen_point_and_keeps_the_rest_of_the_head(self):
        with tempfile.TemporaryDirectory() as d:
            head_dir(d, {"threshold_at_0.1_fa_per_hour": 0.887, "threshold_at_0.5_fa_per_hour": 0.613})
            self.assertEqual(S.set_threshold(d), 0.613)
            head = read_head(d)
            self.assertEqual(head, {"phrase": "OK Hound", "threshold": 0.613, "frames": 16})
            self.assertEqual(S.set_threshold(d, "0.1"), 0.887)
            self.assertEqual(read_head(d)["threshold"], 0.887)

    def test_a_report_without_the_point_is_named_and_the_head_is_left_alone(self):
        with tempfile.TemporaryDirectory() as d:
            head_dir(d, {"threshold_at_0.1_fa_per_hour": 0.887})
            with self.assertRaises(HotPhraseError) as e:
                S.set_threshold(d)
            self.assertIn("eval.json", str(e.exception))
            self.assertEqual(read_head(d)["threshold"], 0.9)

    def test_an_unmeasured_rate_or_an_out_of_range_threshold_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            head_dir(d, {"threshold_at_0.5_fa_per_hour": 1.5})
            with self.assertRaises(HotPhraseError):
                S.set_threshold(d, "0.2")
            with self.assertRaises(HotPhraseError) as e:
                S.set_threshold(d)
            self.assertIn("outside", str(e.exception))
            self.assertEqual(read_head(d)["threshold"], 0.9)


if __name__ == "__main__":
    unittest.main()
