"""The format-1 log-mel front end (hotphrase/frontend.py), which Sources/HotPhrase/FrontEnd.swift reproduces:
framing, the window and the filterbank, and known values on silence, sines and clicks. numpy only."""
import unittest
from unittest import mock

import numpy as np

from hotphrase import constants as C
from hotphrase import frontend as F

LOG_FLOOR_VALUE = np.float32(np.log(np.float32(C.LOG_FLOOR)))  # what a silent frame gives in every channel


def sine(freq, seconds, amplitude=0.5, phase=0.0):
    t = np.arange(int(seconds * C.SAMPLE_RATE)) / C.SAMPLE_RATE
    return (amplitude * np.sin(2 * np.pi * freq * t + phase)).astype(np.float32)


def reference_features(x):
    """The front end written out independently: frames by a plain loop, the DFT as a float64 matrix product."""
    n = np.arange(C.WINDOW)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * n / C.WINDOW)
    k = np.arange(C.NFFT // 2 + 1)[:, None]
    dft = np.exp(-2j * np.pi * k * np.arange(C.WINDOW)[None, :] / C.NFFT)  # zero-padded to NFFT
    frames = []
    t = 0
    while t * C.HOP + C.WINDOW <= len(x):
        spec = dft @ (x[t * C.HOP:t * C.HOP + C.WINDOW].astype(np.float64) * window)
        frames.append(np.log(F.mel_filterbank().astype(np.float64) @ np.abs(spec) ** 2 + C.LOG_FLOOR))
        t += 1
    return np.array(frames).reshape(-1, C.NMEL)


class Framing(unittest.TestCase):
    def test_frame_count_at_the_edges(self):
        # frame t covers samples [160 t, 160 t + 480): nothing before 480 samples, then one more per 160
        for n, frames in ((0, 0), (1, 0), (479, 0), (480, 1), (639, 1), (640, 2), (799, 2), (800, 3),
                          (C.SAMPLE_RATE, 1 + (C.SAMPLE_RATE - 480) // 160)):
            with self.subTest(samples=n):
                self.assertEqual(F.features(np.zeros(n, np.float32)).shape, (frames, C.NMEL))

    def test_dtype_and_shape(self):
        f = F.features(sine(440, 1.0))
        self.assertEqual(f.dtype, np.float32)
        self.assertEqual(f.shape, (98, 40))

    def test_samples_after_the_last_whole_frame_are_ignored(self):
        x = np.random.default_rng(0).standard_normal(1000).astype(np.float32) * 0.1
        y = x.copy()
        y[960:] = 0.9  # 1000 samples make 4 frames, the last ending at sample 960
        np.testing.assert_array_equal(F.features(x), F.features(y))

    def test_streaming_prefix(self):
        # what a streaming detector has after n samples is the first frames of the whole clip's features (up to
        # float32 rounding: the filterbank product's BLAS kernel depends on the number of frames)
        x = np.random.default_rng(1).standard_normal(8000).astype(np.float32) * 0.1
        whole = F.features(x)
        for n in (480, 1234, 4321, 7999):
            part = F.features(x[:n])
            self.assertEqual(len(part), 1 + (n - 480) // 160)
            np.testing.assert_allclose(part, whole[:len(part)], rtol=0, atol=1e-5)

    def test_click_is_heard_only_by_the_frames_whose_window_weights_it(self):
        # the periodic Hann window is 0 at its first sample, so a click at 160 t + 0 is not heard by frame t
        for pos in (0, 160, 479, 480, 500, 959):
            x = np.zeros(2000, np.float32)
            x[pos] = 0.5
            f = F.features(x)
            heard = [t for t in range(len(f)) if not np.all(f[t] == LOG_FLOOR_VALUE)]
            expected = [t for t in range(len(f)) if 0 < pos - C.HOP * t < C.WINDOW]
            with self.subTest(click=pos):
                self.assertEqual(heard, expected)

    def test_blocks_do_not_change_the_numbers(self):
        # long audio is computed BLOCK_FRAMES frames at a time; a small block gives the same features (up to
        # float32 rounding, as above), and every frame is computed once
        x = np.random.default_rng(2).standard_normal(16000).astype(np.float32) * 0.1
        whole = F.features(x)
        with mock.patch.object(F, "BLOCK_FRAMES", 7):
            blocked = F.features(x)
        self.assertEqual(blocked.shape, whole.shape)
        np.testing.assert_allclose(blocked, whole, rtol=0, atol=1e-5)


class WindowAndFilterbank(unittest.TestCase):
    def test_hann(self):
        w = F.hann()
        self.assertEqual(len(w), 480)
        self.assertEqual(w[0], 0.0)
        self.assertAlmostEqual(float(w[240]), 1.0, places=7)
        np.testing.assert_allclose(w[1:], w[1:][::-1], atol=1e-7)  # periodic: w[n] == w[480 - n]
        self.assertAlmostEqual(float(w.astype(np.float64).sum()), 240.0, places=3)

    def test_mel_scale(self):
        self.assertAlmostEqual(float(F.hz_to_mel(1000.0)), 1000.0, delta=0.1)  # HTK: 1000 Hz is about 1000 mel
        self.assertAlmostEqual(float(F.hz_to_mel(0.0)), 0.0)
        f = np.array([60.0, 440.0, 3000.0, 7600.0])
        np.testing.assert_allclose(F.mel_to_hz(F.hz_to_mel(f)), f, rtol=1e-12)

    def test_filterbank_triangles(self):
        fb = F.mel_filterbank()
        self.assertEqual(fb.shape, (40, 257))
        self.assertEqual(fb.dtype, np.float32)
        self.assertGreaterEqual(fb.min(), 0.0)
        self.assertLessEqual(fb.max(), 1.0)
        bin_hz = np.arange(257) * C.SAMPLE_RATE / C.NFFT
        edges = F.mel_to_hz(np.linspace(F.hz_to_mel(C.FMIN), F.hz_to_mel(C.FMAX), C.NMEL + 2))
        for m in range(C.NMEL):
            inside = (bin_hz > edges[m]) & (bin_hz < edges[m + 2])
            self.assertTrue(np.all(fb[m][~inside] == 0), f"triangle {m} outside its band")
            if inside.any():  # the lowest triangles are narrower than a bin and may miss every bin centre
                peak = int(np.argmax(fb[m]))
                self.assertLess(abs(bin_hz[peak] - edges[m + 1]), C.SAMPLE_RATE / C.NFFT, f"triangle {m} peak")
        # nothing below 60 Hz or above 7600 Hz is heard
        self.assertTrue(np.all(fb[:, bin_hz <= C.FMIN] == 0))
        self.assertTrue(np.all(fb[:, bin_hz >= C.FMAX] == 0))

    def test_to_float(self):
        np.testing.assert_array_equal(F.to_float(np.array([-32768, 0, 16384], np.int16)),
                                      np.array([-1.0, 0.0, 0.5], np.float32))


class KnownValues(unittest.TestCase):
    def test_silence_is_the_log_floor(self):
        f = F.features(np.zeros(4000, np.float32))
        self.assertTrue(np.all(f == LOG_FLOOR_VALUE))
        self.assertAlmostEqual(float(LOG_FLOOR_VALUE), -13.815510, places=5)

    def test_against_an_independent_dft(self):
        x = sine(1000, 0.1) + np.random.default_rng(3).standard_normal(1600).astype(np.float32) * 0.01
        np.testing.assert_allclose(F.features(x), reference_features(x), rtol=0, atol=2e-5)

    def test_sine_on_a_bin_has_the_known_power(self):
        # 1000 Hz is FFT bin 32 exactly and 30 whole periods of the 480-sample window: the DFT there is
        # A/2 * sum(window) = A/2 * 240, so its power is (120 A)^2, and the strongest channel is the one whose
        # triangle weights bin 32 most
        a = 0.25
        x = sine(1000, 0.2, amplitude=a, phase=0.3)
        spec = np.fft.rfft(x[:480].astype(np.float64) * F.hann(), C.NFFT)
        self.assertAlmostEqual(abs(spec[32]) ** 2 / (120 * a) ** 2, 1.0, places=4)
        f = F.features(x)
        fb = F.mel_filterbank()
        self.assertEqual(int(np.argmax(f[0])), int(np.argmax(fb[:, 32])))
        # the period (16 samples) divides the hop: every frame is the same
        np.testing.assert_allclose(f, np.broadcast_to(f[0], f.shape), atol=1e-4)

    def test_six_db_louder_is_log_4_more(self):
        # power scales with the square of the amplitude: doubling it adds ln 4 to every channel well above
        # the floor (here noise, which fills them all)
        x = np.random.default_rng(4).standard_normal(3200).astype(np.float32) * 0.05
        f1, f2 = F.features(x), F.features(2 * x)
        self.assertGreater(f1.min(), LOG_FLOOR_VALUE + 10)
        np.testing.assert_allclose(f2 - f1, np.log(4.0), atol=1e-3)

    def test_above_the_band(self):
        # a 7900 Hz whistle, above FMAX (and the window's leakage), is heard as almost nothing next to a 1 kHz
        # tone of the same level: the channels below 6 kHz stay on the floor (within 1e-3) and only the top one
        # moves much, 19 natural-log units below the tone. (Below FMIN there is no such silence: the 30 ms window
        # leaks a hum or a DC offset into channel 0.)
        whistle = F.features(sine(7900, 0.2))
        tone = F.features(sine(1000, 0.2))
        self.assertLess(whistle[:, :33].max(), LOG_FLOOR_VALUE + 1e-3)
        self.assertLess(whistle[:, :39].max(), LOG_FLOOR_VALUE + 0.5)
        self.assertGreater(tone.max() - whistle.max(), 15.0)


if __name__ == "__main__":
    unittest.main()
