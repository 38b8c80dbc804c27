"""The stop word's tooling (issue #61): its real clips' split, the phrase kept out of the other phrases' sentence
filter, the trim of a real clip to its speech, and the own sound under a word at a given echo-to-speech ratio."""
import importlib.util
import unittest

import numpy as np

from hotphrase import dataset as D
from hotphrase import e1data
from hotphrase import get_stop_clips as G

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None


class Split(unittest.TestCase):
    def test_a_speaker_is_on_one_side_by_the_shared_rule(self):
        for spk in ("004ae714", "0132a06d", "fdb5155e", "3659fc1c"):
            self.assertEqual(G.speaker_split(spk) == "eval", D.is_eval_speaker("speech_commands:" + spk))


class SentenceFilter(unittest.TestCase):
    def test_stop_is_not_in_the_shared_filter_but_can_be_asked_for(self):
        meta = ["espeak:en|please stop the car|1.0|1.0", "espeak:en|a computer here|1.0|1.0", "espeak:en|hello|1|1"]
        self.assertEqual(e1data.phrase_free(meta), [True, False, True])
        self.assertEqual(e1data.phrase_free(meta, ["stop"]), [False, False, True])


@unittest.skipUnless(HAVE_SCIPY, "needs scipy (the training venv)")
class Audio(unittest.TestCase):
    def test_trim_keeps_the_word_and_a_margin(self):
        from hotphrase import train_stop as S
        sr = 16000
        x = np.zeros(sr, np.float32)
        x[6000:10000] = 0.3 * np.sin(np.arange(4000) * 0.2)
        y = S.trim_active(x)
        self.assertLessEqual(abs(len(y) - (4000 + 2 * int(0.08 * sr))), 200)
        self.assertGreater(np.abs(y).max(), 0.29)

    def test_own_sound_at_the_asked_ratio(self):
        from hotphrase import augment as A
        from hotphrase import train_stop as S
        rng = np.random.default_rng(1)
        ring = (0.1 * np.sin(np.arange(8000) * 0.3)).astype(np.float32)
        speech = [(0.1 * rng.standard_normal(16000)).astype(np.float32) for _ in range(3)]
        own = S.Own(rng, speech, ring, 30)
        word = np.zeros(48000, np.float32)
        word[16000:24000] = (0.05 * rng.standard_normal(8000)).astype(np.float32)
        ratios = []
        for esr in (-20.0, 0.0, 10.0):
            mixed = S.over_own(np.random.default_rng(2), word, 16000, 24000, own, esr=esr)
            # the echo alone before the word against the word with its echo (set_level scales both alike)
            ratios.append(10 * np.log10(np.mean(mixed[:16000] ** 2) / A.active_power(mixed[16000:24000])))
        self.assertLess(ratios[0], -10)
        self.assertLess(ratios[0], ratios[1])
        self.assertLess(ratios[1], ratios[2])

    def test_the_clean_own_sound_is_the_sound_as_it_plays_even_beside_a_residual(self):
        from hotphrase import train_stop as S
        rng = np.random.default_rng(4)
        ring = (0.1 * np.sin(np.arange(8000) * 0.3)).astype(np.float32)
        speech = [(0.1 * rng.standard_normal(16000)).astype(np.float32) for _ in range(3)]
        saved = S.RESIDUAL
        S.RESIDUAL = {"speech": np.full(64000, 0.5, np.float32), "ring": np.full(64000, -0.5, np.float32)}
        try:
            through = S.Own(rng, speech, ring, 30)
            clean = S.Own(rng, speech, ring, 30, clean=True)
            for kind in (False, True):
                r = through.echo(rng, 4000, ring=kind)
                self.assertTrue(np.all(r == (-0.5 if kind else 0.5)))  # the canceller's output, as given
                c = clean.echo(rng, 4000, ring=kind)
                self.assertEqual(len(c), 4000)
                self.assertFalse(np.all(np.isin(c, (0.5, -0.5))))  # not the residual: the ring or the voice
                self.assertGreater(float(np.std(c)), 0.001)
        finally:
            S.RESIDUAL = saved

    def assert_refused(self, args, says):
        import contextlib
        import io
        from hotphrase import train_stop as S
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors), self.assertRaises(SystemExit):
            S.main(["/nonexistent-workdir"] + args)
        self.assertIn(says, errors.getvalue())

    def test_clean_own_hours_are_refused_without_a_residual_or_below_zero(self):
        for args in (["--clean-own-hours", "3"], ["--clean-own-hours", "-1", "--residual", "/nonexistent"]):
            self.assert_refused(args, "beside --residual")

    @unittest.skipUnless(importlib.util.find_spec("soundfile") is not None, "needs soundfile (the training venv)")
    def test_the_residual_folder_gives_its_phrases_through_the_canceller(self):
        import json
        import os
        import tempfile
        import wave
        from hotphrase import train_stop as S
        from hotphrase.errors import HotPhraseError

        def wav(path, n):
            with wave.open(path, "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(16000)
                w.writeframes((np.arange(n) % 50).astype(np.int16).tobytes())
        with tempfile.TemporaryDirectory() as d:
            for k in ("own-speech", "echo-only-ring", "realvg", "realvg-ring"):
                os.makedirs(os.path.join(d, k))
            wav(os.path.join(d, "own-speech", "000.wav"), 16000)
            wav(os.path.join(d, "echo-only-ring", "rt0.2.wav"), 8000)
            wav(os.path.join(d, "realvg", "rt0.2-0.wav"), 96000)
            with open(os.path.join(d, "realvg", "rt0.2-0.json"), "w") as f:
                json.dump({"phrases": [{"start_sample": 40000, "end_sample": 48000},
                                       {"start_sample": 70000, "end_sample": 76000}]}, f)
            wav(os.path.join(d, "realvg-ring", "rt0.2-5.wav"), 16000)
            with open(os.path.join(d, "realvg-ring", "rt0.2-5.json"), "w") as f:
                # the second phrase was scaled to a pause of the ring: under the room's noise, no voice to learn
                json.dump({"noise": {"rms_dbfs": -66.0},
                           "phrases": [{"start_sample": 2000, "end_sample": 6000, "level_dbfs": -55.2},
                                       {"start_sample": 9000, "end_sample": 12000, "level_dbfs": -91.2}]}, f)
            r = S.load_residual(d)
            self.assertEqual((len(r["speech"]), len(r["ring"])), (16000, 8000))
            self.assertEqual(sorted(r["talk"]), [(os.path.join(d, "realvg-ring", "rt0.2-5.wav"), [(2000, 6000)]),
                                                 (os.path.join(d, "realvg", "rt0.2-0.wav"), [(40000, 48000), (70000, 76000)])])
            x = S._read_wav(os.path.join(d, "realvg", "rt0.2-0.wav"))
            rng = np.random.default_rng(3)
            for end in (48000, 76000, 20000):
                crop, at = S.talk_crop(rng, x, end)
                self.assertGreaterEqual(at, min(end, int(2.6 * 16000)))
                self.assertLessEqual(at, int(3.2 * 16000) + 1)
                self.assertGreater(len(crop), at)  # the steps after the phrase's end are in the crop
                self.assertLessEqual(np.abs(crop).max(), 1.0)
            os.remove(os.path.join(d, "realvg", "rt0.2-0.json"))
            with self.assertRaises(HotPhraseError):
                S.load_residual(d)

    def test_ring_hours_and_the_ring_residual_go_together(self):
        for args in (["--ring-hours", "2"], ["--ring-residual", "/nonexistent"],
                     ["--ring-hours", "0", "--ring-residual", "/nonexistent"],
                     ["--ring-hours", "-1", "--ring-residual", "/nonexistent"]):
            self.assert_refused(args, "both, and more than 0 hours")

    @unittest.skipUnless(importlib.util.find_spec("soundfile") is not None, "needs soundfile (the training venv)")
    def test_the_ring_residual_is_the_ring_alone_and_named_by_its_files(self):
        import os
        import tempfile
        import wave
        from hotphrase import train_stop as S
        from hotphrase.errors import HotPhraseError

        def wav(path, n, value):
            with wave.open(path, "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(16000)
                w.writeframes(np.full(n, value, np.int16).tobytes())
        with tempfile.TemporaryDirectory() as d:
            for k in ("own-speech", "echo-only-ring", "echo-only"):
                os.makedirs(os.path.join(d, k))
            with self.assertRaises(HotPhraseError):
                S.load_ring_residual(d)
            wav(os.path.join(d, "own-speech", "000.wav"), 16000, 1000)
            wav(os.path.join(d, "echo-only-ring", "rt0.2.wav"), 8000, 2000)
            wav(os.path.join(d, "echo-only", "rt0.2.wav"), 4000, 3000)  # the answers' residual: not the ring
            r = S.load_ring_residual(d)
            self.assertEqual(len(r["ring"]), 24000)
            self.assertEqual(sorted(set(np.round(r["ring"] * 32768).astype(int))), [1000, 2000])
            wav(os.path.join(d, "own-speech", "001.wav"), 160, 1000)
            self.assertNotEqual(S.load_ring_residual(d)["key"], r["key"])


if __name__ == "__main__":
    unittest.main()
