"""The front ends ahead of the embedding, by name (frontend_registry.py): the product's one, "none", and one
registered as the lab registers its own."""
import unittest

import numpy as np

from hotphrase import frontend_registry as FR
from hotphrase.errors import HotPhraseError


class Product(unittest.TestCase):
    def test_none_is_no_front_end(self):
        for spec in (None, "", "none"):
            self.assertIsNone(FR.parse_frontend(spec))
            self.assertIsNone(FR.make(spec))
            self.assertEqual(FR.tag(spec), "")
        x = np.array([0.5, -0.25], np.float64)
        np.testing.assert_array_equal(FR.apply_float(None, x), x.astype(np.float32))

    def test_the_product_knows_no_other(self):
        self.assertEqual(FR.metavar(), "none")
        with self.assertRaisesRegex(HotPhraseError, "unknown front end: want none .*hotphraselab"):
            FR.parse_frontend("speex-denoise")


class Registered(unittest.TestCase):
    def setUp(self):
        def parse(spec, arg):
            if arg is None:
                return "halve:2"
            if not arg.isdigit():
                raise HotPhraseError(spec, "want halve[:N]")
            return f"halve:{int(arg)}"
        FR.register("halve", "halve[:N]", parse, lambda name: (lambda x: (x // int(name.split(":")[1])).astype(np.int16)))

    def tearDown(self):
        del FR._registered["halve"]

    def test_parsed_made_and_tagged(self):
        self.assertEqual(FR.metavar(), "none|halve[:N]")
        self.assertEqual(FR.parse_frontend("halve"), "halve:2")
        self.assertEqual(FR.tag("halve:4"), "-halve4")
        np.testing.assert_array_equal(FR.make("halve:4")(np.array([400, -8], np.int16)), [100, -2])
        y = FR.apply_float(FR.make("halve"), np.array([0.5, -0.5]))
        np.testing.assert_allclose(y, [0.25, -0.25])
        with self.assertRaisesRegex(HotPhraseError, "want halve"):
            FR.parse_frontend("halve:x")
        with self.assertRaisesRegex(HotPhraseError, "unknown front end: want none or halve\\[:N\\]"):
            FR.parse_frontend("double")


if __name__ == "__main__":
    unittest.main()
