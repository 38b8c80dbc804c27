"""tse_probe: the SI-SDR it reports (the output's delay searched) and the speakers it draws."""
import unittest

import numpy as np

from hotphraselab import tse_probe as P


class Probe(unittest.TestCase):
    def test_si_sdr_finds_the_delay_and_ignores_the_scale(self):
        rng = np.random.default_rng(1)
        ref = rng.standard_normal(16000)
        late = np.concatenate([np.zeros(400), 0.3 * ref])
        self.assertGreater(P.si_sdr(ref, late), 60)  # the same signal, 400 samples late and quieter
        noisy = late + 0.3 * np.concatenate([np.zeros(400), rng.standard_normal(16000)])
        self.assertAlmostEqual(P.si_sdr(ref, noisy), 0.0, delta=0.3)  # as loud again in noise: about 0 dB
        self.assertLess(P.si_sdr(ref, np.concatenate([np.zeros(400), rng.standard_normal(16000)])), -10)
        self.assertLess(P.si_sdr(ref, late, max_lag=200), 10)  # a delay beyond the search is not found

    def test_speakers_are_a_file_names_first_field_with_two_recordings(self):
        files = ["a/103-1240-0000.flac", "a/0001_000010133.flac", "a/0001_000010135.flac", "a/1034-1-0.flac",
                 "a/1034-1-1.flac"]
        self.assertEqual(P.by_speaker(files), {"0001": files[1:3], "1034": files[3:]})


if __name__ == "__main__":
    unittest.main()
