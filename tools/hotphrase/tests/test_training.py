"""The training loop both formats share (hotphrase/training.py: fit): every step trains on one batch, the loss is
printed as the mean of the last `log_every` steps, and the hard negatives are mined at a quarter, half and three
quarters of the way. keras is not needed: the model here is the smallest object with keras's train_on_batch."""
import contextlib
import io
import unittest

import numpy as np

from hotphrase import training


class Counting:
    """train_on_batch returns the step number as the loss; batch(size) hands out the step number as x."""

    def __init__(self):
        self.seen, self.step = [], 0

    def train_on_batch(self, x, y):
        self.seen.append((x, y))
        return float(x)

    def batch(self, size):
        self.step += 1
        return self.step, np.zeros(size)


class Fit(unittest.TestCase):
    def run_fit(self, steps, log_every):
        m = Counting()
        mined_at = []

        def mine():
            mined_at.append(m.step)
            return 10 * len(mined_at), 0.5
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            training.fit(m, m, steps, 4, log_every, mine)
        return m, mined_at, out.getvalue().splitlines()

    def test_each_step_trains_on_its_own_batch(self):
        m, _, _ = self.run_fit(12, 4)
        self.assertEqual([x for x, _ in m.seen], list(range(1, 13)))
        self.assertTrue(all(len(y) == 4 for _, y in m.seen))

    def test_mines_at_the_quarters(self):
        _, mined_at, lines = self.run_fit(12, 4)
        self.assertEqual(mined_at, [3, 6, 9])
        self.assertIn("  mined 20 hard negative windows (lowest kept probability 0.500)", lines)

    def test_prints_the_mean_loss_of_the_last_steps(self):
        _, _, lines = self.run_fit(12, 4)
        losses = [line for line in lines if "loss" in line]
        # steps 5-8 have losses 5..8: mean 6.5
        self.assertEqual(losses, ["  step 4: loss 2.5000", "  step 8: loss 6.5000", "  step 12: loss 10.5000"])


if __name__ == "__main__":
    unittest.main()
