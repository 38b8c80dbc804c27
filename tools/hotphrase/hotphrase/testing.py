"""Made-up audio and noise for the package's and the lab's unit tests (tests/, lab/tests/): seeded, so each run
hears the same."""

import numpy as np

from hotphrase import augment as A
from hotphrase.constants import SAMPLE_RATE


def take(seconds=1.0, seed=0, burst="tone"):
    """An int16 take: a tone (or noise) burst in the middle of faint noise."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SAMPLE_RATE)
    x = 30 * rng.standard_normal(n)
    a, b = n // 4, 3 * n // 4
    x[a:b] += 8000 * np.sin(np.arange(b - a) * 0.07) if burst == "tone" else 3000 * rng.standard_normal(b - a)
    return np.round(x).astype(np.int16)


def tone(n, amp=0.2, seed=0):
    """A float32 tone of `n` samples over a trace of seeded noise."""
    rng = np.random.default_rng(seed)
    return (amp * np.sin(np.arange(n) * 0.05) + 0.001 * rng.standard_normal(n)).astype(np.float32)


class FakeBanks:
    """dataset.Banks' interface: two noise families of seeded Gaussian noise."""
    kinds = ["fan", "street"]
    b = {"fan": np.random.default_rng(2).standard_normal(80000).astype(np.float32),
         "street": np.random.default_rng(3).standard_normal(80000).astype(np.float32)}

    def noise(self, rng, n):
        return A.crop(rng, self.b[self.kinds[rng.integers(len(self.kinds))]], n)
