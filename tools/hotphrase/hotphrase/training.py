"""What both formats' training shares (hotphrase.train --format 1|2): the positives' noise, the sentences spoken
around them, the hour of noise alone among the negatives, and the training loop with its three minings of hard
negatives."""
import time

import numpy as np

# Positives' noise: SNR drawn from POS_SNR dB, or a quiet room (35-50 dB) for a POS_QUIET share: the same shares as
# the negatives' (D.negative_piece: -5 to 25 dB, 15 % quiet) so that how clean a window is says nothing about
# whether it holds the phrase. (v4 had 0-20 dB and 10 % quiet, and missed clean held-out voices more often than
# noisy ones.)
POS_SNR = (0, 25)
POS_QUIET = 0.15
FILLERS = 400  # training sentences spoken before and after positives (D.positive) and in babble
NOISE_SECONDS = 3600  # training noise, music and babble alone among the negatives


def fit(m, sampler, steps, batch, log_every, mine, step_ms=False):
    """Trains the keras model `m` on sampler.batch(batch) for `steps` steps, printing the mean loss every
    `log_every` steps (with step_ms, the time per step too), and calls mine() at a quarter, half and three quarters
    of the way: it re-mines the sampler's hard negatives and returns (how many, the lowest kept probability)."""
    t = time.time()
    losses = []
    for step in range(1, steps + 1):
        x, y = sampler.batch(batch)
        losses.append(float(m.train_on_batch(x, y)))
        if step % log_every == 0:
            ms = f" ({(time.time() - t) / step * 1000:.0f} ms/step)" if step_ms else ""
            print(f"  step {step}: loss {np.mean(losses[-log_every:]):.4f}{ms}", flush=True)
        if step in (steps // 4, steps // 2, 3 * steps // 4):
            count, worst = mine()
            print(f"  mined {count} hard negative windows (lowest kept probability {worst:.3f})", flush=True)
