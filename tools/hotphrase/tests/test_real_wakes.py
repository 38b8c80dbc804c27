"""hotphrase.real_wakes: false wakes on real recordings through the speaker's own detector. The end-to-end case
runs the built `hound-speaker` (HOUND_SPEAKER_BIN, else .build/debug or .build/release) with the shipped model and
needs soundfile (the training venv: PYTHON=.venv-hotphrase/bin/python tools/hotphrase/test.sh)."""
import importlib.util
import json
import os
import shutil
import tempfile
import unittest

from hotphrase import real_wakes as R
from hotphrase.errors import HotPhraseError

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
DEMO = os.path.join(ROOT, "share", "demo", "ok-hound-what-time-is-it.wav")
MODEL = os.path.join(ROOT, "share", "hotphrase", "ok-hound.hpm")


def binary():
    for b in (os.environ.get("HOUND_SPEAKER_BIN"), os.path.join(ROOT, ".build", "debug", "hound-speaker"),
              os.path.join(ROOT, ".build", "release", "hound-speaker")):
        if b and os.access(b, os.X_OK):
            return b
    return None


class Folders(unittest.TestCase):
    def test_a_folder_without_recordings_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "notes.txt"), "w").write("x")
            with self.assertRaises(HotPhraseError) as e:
                R.files_under(d)
            self.assertIn(d, str(e.exception))

    def test_recordings_are_found_recursively_in_order(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "b"))
            for p in ("b/2.flac", "a.WAV", "b/1.wav", "c.txt"):
                open(os.path.join(d, p), "w").close()
            self.assertEqual([os.path.relpath(p, d) for p in R.files_under(d)], ["a.WAV", "b/1.wav", "b/2.flac"])


@unittest.skipUnless(importlib.util.find_spec("soundfile") and binary(), "needs soundfile and a built hound-speaker")
class ThroughTheSwiftDetector(unittest.TestCase):
    def test_every_detection_counts_at_each_threshold(self):
        # The demo recording holds "OK Hound" once, whose score under the shipped model peaks at 0.967 (BENCHMARKS.md,
        # "Issue #37"): two copies are two wakes at 0.6 and none at 0.99, and the hours are the two copies and their gaps.
        import soundfile
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "set"))
            for n in ("1.wav", "2.wav"):
                shutil.copy(DEMO, os.path.join(d, "set", n))
            out = os.path.join(d, "report.json")
            self.assertEqual(R.main([MODEL, "--swift-bin", binary(), "--real-speech", "none", "--set",
                                     f"demo={d}/set", "--threshold", "0.6", "--threshold", "0.99",
                                     "--json", out]), 0)
            report = json.load(open(out))
        row = report["sets"]["demo"]
        self.assertEqual(row["false_wakes"], {"0.6": 2, "0.99": 0})
        seconds = 2 * (soundfile.info(DEMO).frames / 16000 + R.GAP_SECONDS)
        self.assertAlmostEqual(row["hours"], seconds / 3600, places=3)
        self.assertEqual(report["total_false_wakes"], {"0.6": 2, "0.99": 0})


if __name__ == "__main__":
    unittest.main()
