"""A dereverberating front end ahead of the hot-phrase embedding (issue #37, part 2, session 12): weighted prediction
error (WPE, Nakatani and Yoshioka's linear-prediction dereverberation) as the nara_wpe package implements it, single
channel. A measuring tool's dependency (pip's nara_wpe), not part of the speaker.

  Dereverb(block_seconds=4.0)(int16 samples) -> int16 samples, the same length

Why: session 11's ideal gate that also takes a room's late tail out (household_conditions --oracle-early 50) cut
computer's misses in a room from 28.48 % to 10.79 %, and gate-g, trained for it on synthetic rooms, took none of
that back. WPE is the method made for the late tail: per frequency, it predicts the late reverberation of each
frame from the frames `delay` and more before it (`taps` of them) and subtracts it, weighting frames by their
estimated power so that speech, not its tail, sets the filter.

As measured here, batch WPE per block: each block of `block_seconds` (a rendering, a clip with its 2 s lead-in, is
about 3-4 s: one block) gets its own filters, estimated from that block alone, `iterations` times. That is not
causal (a block's filters see its whole block), so it is an optimistic bound for what an online WPE on the device
could do in the same room; a long test-side stream is cut into consecutive blocks so that no filter spans more
audio than a rendering does. nara_wpe's settings for 16 kHz: a 512-point STFT (32 ms) with a 128-sample shift,
delay 3, 3 iterations; taps 20 rather than its 10. Chosen on training-side speech (dataset.real_speech("train"),
8 utterances through three of the evaluation's rooms), by how close the log spectrum comes to the room's first 50 ms
alone: taps 10 took the distance from 0.285 to 0.256, 20 to 0.239, 40 to 0.221 at twice 20's cost.

The front end's name, as the command lines and cache keys spell it (frontends.py): "wpe".
"""
import numpy as np

from hotphrase.errors import HotPhraseError

SAMPLE_RATE = 16000
SIZE = 512
SHIFT = 128
TAPS = 20
DELAY = 3
ITERATIONS = 3


def _nara():
    try:
        from nara_wpe.utils import istft, stft
        from nara_wpe.wpe import wpe
    except ImportError:
        raise HotPhraseError("nara_wpe", "the wpe front end needs pip's nara_wpe (pip install nara_wpe==0.0.11)") \
            from None
    return stft, istft, wpe


def dereverb_float(x, taps=TAPS, delay=DELAY, iterations=ITERATIONS):
    """One block of float samples, dereverberated by batch WPE over that block; the same length."""
    stft, istft, wpe = _nara()
    n = len(x)
    spec = stft(np.asarray(x, np.float64)[None, :], size=SIZE, shift=SHIFT)  # (1, frames, bins)
    y = wpe(spec.transpose(2, 0, 1), taps=taps, delay=delay, iterations=iterations,
            statistics_mode="full").transpose(1, 2, 0)
    out = istft(y, size=SIZE, shift=SHIFT)[0]
    return out[:n] if len(out) >= n else np.pad(out, (0, n - len(out)))


class Dereverb:
    """WPE per block of `block_seconds`; each call runs over one stream from its start."""

    def __init__(self, block_seconds=4.0, taps=TAPS, delay=DELAY, iterations=ITERATIONS):
        if not block_seconds > 0:
            raise HotPhraseError(f"block of {block_seconds} s", "a WPE block must be longer than nothing")
        self.block = int(round(block_seconds * SAMPLE_RATE))
        if self.block < SIZE * 2:
            raise HotPhraseError(f"block of {block_seconds} s", f"shorter than two STFT frames ({2 * SIZE} samples)")
        self.taps, self.delay, self.iterations = taps, delay, iterations

    def __call__(self, samples):
        x = np.asarray(samples)
        if x.dtype != np.int16:
            raise HotPhraseError(f"samples of {x.dtype}", "the front end takes int16 samples")
        if len(x) == 0:
            return x.copy()
        xf = x.astype(np.float64) / 32768.0
        # A short last piece joins the block before it: WPE needs frames to estimate a filter from.
        edges = list(range(0, len(xf), self.block))
        if len(edges) > 1 and len(xf) - edges[-1] < self.block // 2:
            edges.pop()
        edges.append(len(xf))
        out = np.concatenate([dereverb_float(xf[a:b], self.taps, self.delay, self.iterations)
                              for a, b in zip(edges[:-1], edges[1:])])
        return np.clip(np.round(out * 32768), -32768, 32767).astype(np.int16)
