"""The one pipeline's --format option (hotphrase.train, evaluate, reference; cli.parse_formats): each format gets its
own defaults, and an option of the other format is refused by name. train and evaluate import the augmentation
(scipy), so those are skipped without it."""
import contextlib
import importlib.util
import io
import os
import unittest

from hotphrase import reference

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "Tests", "HotPhraseTests", "Fixtures")


def refused(parse, argv):
    """argparse's exit status and message for argv."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), unittest.TestCase().assertRaises(SystemExit) as e:
        parse(argv)
    return e.exception.code, err.getvalue()


@unittest.skipUnless(HAVE_SCIPY, "needs scipy (the training venv)")
class Train(unittest.TestCase):
    def test_format_1_is_the_default_with_its_defaults(self):
        from hotphrase import train, train_format1
        a, mod = train.parse(["ok-hound", "work"])
        self.assertIs(mod, train_format1)
        self.assertEqual((a.format, a.steps, a.batch, a.channels, a.no_l2), (1, 10000, 256, 96, False))

    def test_format_2_has_its_own_defaults(self):
        from hotphrase import train, train_format2
        a, mod = train.parse(["view-glass", "work", "--format", "2", "--extra-negatives", "public/train"])
        self.assertIs(mod, train_format2)
        self.assertEqual((a.steps, a.batch, a.frames, a.extra_negatives), (3000, 512, 16, ["public/train"]))

    def test_shared_options_given_are_kept(self):
        from hotphrase import train
        a, _ = train.parse(["ok-hound", "work", "--format", "2", "--steps", "7", "--seed", "3"])
        self.assertEqual((a.steps, a.batch, a.seed), (7, 512, 3))

    def test_an_option_of_the_other_format_is_refused_by_name(self):
        from hotphrase import train
        code, msg = refused(train.parse, ["ok-hound", "work", "--format", "2", "--no-l2"])
        self.assertEqual(code, 2)
        self.assertIn("--no-l2 is an option of --format 1", msg)
        code, msg = refused(train.parse, ["ok-hound", "work", "--slow-share", "0.5"])
        self.assertIn("--slow-share is an option of --format 2", msg)

    def test_format_1_seed_must_be_positive(self):
        from hotphrase import train
        self.assertIn("--seed must be >= 1", refused(train.parse, ["ok-hound", "work", "--seed", "0"])[1])


@unittest.skipUnless(HAVE_SCIPY, "needs scipy (the training venv)")
class Evaluate(unittest.TestCase):
    def test_limit_defaults_per_format(self):
        from hotphrase import evaluate
        self.assertIsNone(evaluate.parse(["ok-hound", "work"])[0].limit)
        self.assertEqual(evaluate.parse(["ok-hound", "work", "--format", "2"])[0].limit, 600)

    def test_an_option_of_the_other_format_is_refused_by_name(self):
        from hotphrase import evaluate
        self.assertIn("--model is an option of --format 1",
                      refused(evaluate.parse, ["ok-hound", "work", "--format", "2", "--model", "m.hpm"])[1])
        self.assertIn("--head is an option of --format 2",
                      refused(evaluate.parse, ["ok-hound", "work", "--head", "h"])[1])

    def test_an_unknown_format_is_refused(self):
        from hotphrase import evaluate
        self.assertEqual(refused(evaluate.parse, ["ok-hound", "work", "--format", "3"])[0], 2)


class Reference(unittest.TestCase):
    def test_lead_is_format_2s(self):
        code, msg = refused(reference.main, [os.path.join(FIXTURES, "ok-hound-v9.hpm"), "out.json", "a.wav",
                                             "--lead", "1"])
        self.assertEqual(code, 2)
        self.assertIn("--lead is an option of --format 2", msg)


if __name__ == "__main__":
    unittest.main()
