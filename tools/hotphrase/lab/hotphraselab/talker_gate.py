"""A dominant-talker gate ahead of the embedding (issue #37, part 2, session 10): our own small network, trained here
(talker_gate_train.py) to keep the loudest voice and take out quieter voices and noise.

Session 9b's GTCRN, trained to keep any speech, kept the babble of other voices and made the misses in babble worse.
In issue #37's rooms at 10 dB the wanted voice is the loudest one: the babble's talkers are each 15-18 dB below it,
and between its words the babble is all there is. This gate is trained on exactly that (real voices of training
speakers as the target, three to seven other training speakers' voices, or one to three, or a training noise, at
-5 to 25 dB under it, both through training rooms), so that it can learn to follow the dominant talker's level
and cut what lies well under it. How far it does (not far enough in babble) is BENCHMARKS.md's "Issue #37, part 2,
session 10", beside the ideal gate (oracle, below) that shows how far a gate could.

The network: per 10 ms frame the 40 HTK-mel band powers of the speaker's log-mel front end (frontend.py:
mel_filterbank, 512-point FFT of a 30 ms Hann window) as log energies, normalised by the training mean and spread,
one GRU and a linear layer to one gain per band, in [floor, 1]; the band gains are spread onto the FFT bins by the
bands' triangles (bin_map). Or, at the "bins" resolution, the same on the 257 bins' log powers, one gain a bin
(enough to follow the loud voice's harmonics, which 40 bands cannot); or (session 11) the bins' log powers in
and one gain a band out, the network hearing the harmonics and the gains as cheap to apply as the bands'. Then
the short-time spectrum is scaled by them and synthesised again (scipy's ShortTimeFFT, its canonical dual window).
Causal, or nearly: a frame's gains depend only on it, the frames before it and, with a look-ahead of K frames, the
K frames after it (the network's output K steps later is the frame's gain: K times 10 ms of delay on a device).

The weights file (.npz, written by talker_gate_train), N and M each 40 (bands) or 257 (bins), in and out: mean, std
(N), the GRU's w_ih (3H x N), w_hh (3H x H), b_ih, b_hh (3H; PyTorch's gate order r, z, n), the output layer's w_out
(M x H), b_out (M), floor (the smallest gain) and, optionally, lookahead (K frames; without it 0). `Gate(path)` runs
it as a front end int16 -> int16, as frontend_registry.make runs its front ends.

A gate that knows the enrolled voice (session 12; talker_gate_train --enrolled, after Google's VoiceFilter-Lite):
inside the keyword only the voice can tell the wanted talker from the babble (session 11), so the network also
hears a speaker vector made from the enrollment's audio, the same vector appended to every frame's input. The
vector: the enrollment's frames through the same features, those within SPEAKER_RANGE_DB of its loudest frame
(its speech, not its pauses), each through a linear layer and tanh, averaged. The weights file then also holds
spk_w (D x N) and spk_b (D), and the GRU's w_ih is 3H x (N + D); `Gate.enrol(samples)` sets the voice, and such a
gate refuses to run before it is enrolled.

  python -m hotphraselab.talker_gate WEIGHTS IN.wav OUT.wav     the gate over one recording
"""
import os
import sys

import numpy as np

from hotphrase import cli
from hotphrase import frontend
from hotphrase.constants import HOP, INT16_SCALE, NFFT, NMEL, WINDOW
from hotphrase.constants import SAMPLE_RATE as SR
from hotphrase.errors import HotPhraseError

POWER_FLOOR = 1e-7  # added to band powers before the log (float samples): about 90 dB under a full-scale band
WEIGHT_KEYS = ("mean", "std", "w_ih", "w_hh", "b_ih", "b_hh", "w_out", "b_out", "floor")
MAX_LOOKAHEAD = 20  # frames (200 ms): more would be a wait a person hears before the speaker answers
SPEAKER_KEYS = ("spk_w", "spk_b")  # a gate conditioned on the enrolled voice (session 12)
SPEAKER_RANGE_DB = 30.0  # the enrollment's frames within this of its loudest make the speaker vector


def stft():
    """The analysis and synthesis: a periodic 30 ms Hann window every 10 ms, 512-point FFT."""
    from scipy.signal import ShortTimeFFT
    from scipy.signal.windows import hann
    return ShortTimeFFT(hann(WINDOW, sym=False), hop=HOP, fs=SR, mfft=NFFT)


def bin_map():
    """(NFFT//2+1, NMEL): bin k's gain is row k times the band gains, the bands' triangles at k normalised to sum
    to one; bins outside every triangle (under 60 Hz, over 7.6 kHz) take the nearest band's gain."""
    fb = frontend.mel_filterbank().astype(np.float64).T  # (bins, bands)
    s = fb.sum(axis=1, keepdims=True)
    m = np.where(s > 0, fb / np.where(s > 0, s, 1), 0.0)
    centre = np.argmax(fb, axis=0)  # each band's peak bin
    for k in np.where(s[:, 0] == 0)[0]:
        m[k, int(np.argmin(np.abs(centre - k)))] = 1.0
    return m.astype(np.float32)


def band_power(power):
    """(bins, frames) power spectrum -> (frames, NMEL) band powers."""
    return (frontend.mel_filterbank() @ power).T


NBINS = NFFT // 2 + 1
RESOLUTIONS = {"bands": NMEL, "bins": NBINS}  # a gain per mel band (spread onto the bins), or one per FFT bin


def log_powers(power, n):
    """(frames, n) log powers of a (bins, frames) power spectrum: the NMEL bands', or the NBINS bins' themselves."""
    return np.log((power.T if n == NBINS else band_power(power)) + POWER_FLOOR)


def features(power, mean, std):
    """(frames, NMEL) normalised log band energies, or (frames, NBINS) log bin powers when mean has NBINS entries:
    the network's input."""
    return ((log_powers(power, len(mean)) - mean) / std).astype(np.float32)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def voiced(feats_raw_log):
    """(frames,) mask of the frames whose total log band energy is within SPEAKER_RANGE_DB of the loudest frame's;
    feats_raw_log: (frames, N) natural-log band powers (before normalisation)."""
    e = np.log(np.exp(feats_raw_log).sum(axis=1))
    return e >= e.max() - SPEAKER_RANGE_DB / 10 * np.log(10)


ENROL_CLIPS = 3  # the household's takes: a clip's gate is enrolled on this many other clips of its speaker
ENROL_GAP = int(0.3 * SR)  # silence after each clip of an enrollment (talker_gate_train's between utterances)


def enrollment_sets(names, labels, wrong=False):
    """The measurements' enrollment rule for a conditioned gate: per clip (names in order, labels {name: speaker}),
    the indices of the clips its gate is enrolled on: up to ENROL_CLIPS other clips of its speaker (the first in
    order that are not the clip itself), or with wrong=True (the control) the first ENROL_CLIPS of the next
    speaker's (labels in order, round); [] when there is none."""
    by = {}
    for i, n in enumerate(names):
        by.setdefault(labels[n], []).append(i)
    order = sorted(by)
    out = []
    for i, n in enumerate(names):
        lab = labels[n]
        if wrong:
            other = order[(order.index(lab) + 1) % len(order)]
            out.append(by[other][:ENROL_CLIPS] if other != lab else [])
        else:
            out.append([j for j in by[lab] if j != i][:ENROL_CLIPS])
    return out


def enrollment_audio(clips):
    """Float clips joined, ENROL_GAP of silence after each: what Gate.enrol hears."""
    parts = [p for c in clips for p in (np.asarray(c, np.float32), np.zeros(ENROL_GAP, np.float32))]
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)


def speaker_vector(feats, mask, spk_w, spk_b):
    """The enrollment's speaker vector: the mean over its masked frames of tanh(spk_w f + spk_b)."""
    return np.tanh(feats[mask] @ spk_w.T + spk_b).mean(axis=0).astype(np.float32)


class Gate:
    """The gate as a front end: int16 -> int16 of the same length, one fresh state per call (per stream)."""

    def __init__(self, path):
        if not os.path.isfile(path):
            raise HotPhraseError(path, "no talker-gate weights file")
        with np.load(path) as z:
            missing = [k for k in WEIGHT_KEYS if k not in z]
            if missing:
                raise HotPhraseError(path, f"not talker-gate weights: no {', '.join(missing)}")
            self.w = {k: z[k].astype(np.float32) for k in WEIGHT_KEYS}
            has = [k for k in SPEAKER_KEYS if k in z]
            if has and len(has) != len(SPEAKER_KEYS):
                raise HotPhraseError(path, f"a conditioned gate's weights need {' and '.join(SPEAKER_KEYS)}")
            self.spk = {k: z[k].astype(np.float32) for k in has} or None
            k = z["lookahead"] if "lookahead" in z else np.int64(0)
        if k.shape != () or not np.issubdtype(k.dtype, np.integer) or not 0 <= int(k) <= MAX_LOOKAHEAD:
            raise HotPhraseError(path, f"talker-gate look-ahead must be a whole number of frames, 0 to {MAX_LOOKAHEAD}")
        self.lookahead = int(k)
        h3, nin = self.w["w_ih"].shape
        nout = self.w["w_out"].shape[0]
        self.dim = 0  # the speaker vector's size (0: not conditioned)
        if self.spk is not None:
            self.dim = self.spk["spk_w"].shape[0]
            if (self.spk["spk_w"].shape != (self.dim, len(self.w["mean"])) or self.spk["spk_b"].shape != (self.dim,)
                    or nin <= self.dim):
                raise HotPhraseError(path, f"speaker layer of the wrong shape (spk_w {self.spk['spk_w'].shape})")
            nin -= self.dim
        if (nin not in RESOLUTIONS.values() or nout not in RESOLUTIONS.values() or h3 % 3
                or self.w["w_hh"].shape != (h3, h3 // 3) or self.w["w_out"].shape != (nout, h3 // 3)
                or self.w["b_out"].shape != (nout,) or self.w["mean"].shape != (nin,)):
            raise HotPhraseError(path, f"talker-gate weights of the wrong shape (w_ih {self.w['w_ih'].shape}, "
                                       f"w_out {self.w['w_out'].shape})")
        self.hidden = h3 // 3
        self.map = bin_map() if nout == NMEL else None  # per-bin gains need no spreading
        self._sft = None
        self.voice = None  # the enrolled speaker vector (conditioned gates only)

    @property
    def conditioned(self):
        return self.spk is not None

    def enrol(self, samples):
        """Sets the voice to keep from the enrollment's audio (int16, or float on [-1, 1)), e.g. its takes joined."""
        if not self.conditioned:
            raise HotPhraseError("enrol", "this gate is not conditioned on a voice (no spk_w in its weights)")
        x = np.asarray(samples)
        x = x.astype(np.float32) / INT16_SCALE if x.dtype == np.int16 else x.astype(np.float32)
        if len(x) < WINDOW:
            raise HotPhraseError("enrol", f"{len(x)} samples: too short to hear a voice in")
        spec = self.sft.stft(x)
        power = spec.real ** 2 + spec.imag ** 2
        if not np.any(power > 0):
            raise HotPhraseError("enrol", "the enrollment is silent")
        raw = log_powers(power, len(self.w["mean"]))
        feats = ((raw - self.w["mean"]) / self.w["std"]).astype(np.float32)
        self.voice = speaker_vector(feats, voiced(raw), self.spk["spk_w"], self.spk["spk_b"])
        return self.voice

    # What hotphrase.household_eval asks of a front end that is `conditioned` (it knows no gate by name): which
    # clips enrol each clip's gate, and the enrollment on those clips.
    @staticmethod
    def enrollment_sets(names, labels):
        return enrollment_sets(names, labels)

    def enrol_clips(self, clips):
        return self.enrol(enrollment_audio(clips))

    @property
    def sft(self):
        """The STFT, made on first use: scipy (1.12 or later) is needed only to run the gate over samples."""
        if self._sft is None:
            self._sft = stft()
        return self._sft

    def gains(self, feats):
        """(frames, NMEL or NBINS) gains for the features, the GRU run frame by frame from a zero state; with a
        look-ahead of K, frame t's gains are the output at frame t + K (the stream's last K frames take its last
        output: nothing after it is heard)."""
        w, H = self.w, self.hidden
        if self.conditioned:
            if self.voice is None:
                raise HotPhraseError("talker gate", "conditioned on a voice: enrol it first (Gate.enrol)")
            feats = np.concatenate([feats, np.broadcast_to(self.voice, (len(feats), self.dim))], axis=1)
        xi = feats @ w["w_ih"].T + w["b_ih"]  # the input's part of every gate, all frames at once
        h = np.zeros(H, np.float32)
        out = np.empty((len(feats), H), np.float32)
        whh, bhh = w["w_hh"], w["b_hh"]
        for t in range(len(feats)):
            hh = whh @ h + bhh
            r = sigmoid(xi[t, :H] + hh[:H])
            z = sigmoid(xi[t, H:2 * H] + hh[H:2 * H])
            n = np.tanh(xi[t, 2 * H:] + r * hh[2 * H:])
            h = (1.0 - z) * n + z * h
            out[t] = h
        fl = float(w["floor"])
        g = fl + (1.0 - fl) * sigmoid(out @ w["w_out"].T + w["b_out"])
        k = min(self.lookahead, len(g) - 1) if len(g) else 0
        return np.concatenate([g[k:], np.repeat(g[-1:], k, axis=0)]) if k else g

    def bin_gains(self, spec):
        """(bins, frames) gains for a (bins, frames) short-time spectrum of a stream from its start."""
        power = spec.real ** 2 + spec.imag ** 2
        g = self.gains(features(power, self.w["mean"], self.w["std"])).T
        return g if self.map is None else self.map @ g

    def process_float(self, x):
        """float samples in [-1, 1) -> the gated samples, the same length."""
        x = np.asarray(x, np.float32)
        n = len(x)
        if n == 0:
            return x.copy()
        if n < WINDOW:  # ShortTimeFFT wants at least half a window; zeros after it change no earlier frame's gain
            x = np.pad(x, (0, WINDOW - n))
        spec = self.sft.stft(x)  # (bins, frames), frame p centred on sample p * HOP
        y = self.sft.istft(spec * self.bin_gains(spec), k1=len(x))
        return y[:n].astype(np.float32)

    def __call__(self, int16):
        x = np.asarray(int16, np.int16).astype(np.float32) / INT16_SCALE
        y = self.process_float(x)
        return np.clip(np.round(y * INT16_SCALE), -32768, 32767).astype(np.int16)


ORACLE_FLOOR_DB = -30.0  # the oracle's smallest gain: talker_gate_train's default floor


def oracle_gains(mix_spec, speech_spec, resolution, floor_db=ORACLE_FLOOR_DB):
    """(bins, frames) gains of the ideal gate for a mixture's and its speech's short-time spectra: per frame the
    ideal ratio mask sqrt(S / (S + N)) of the speech's and the rest's powers, per mel band (spread onto the bins as
    the gate's are) or per FFT bin, kept in [floor, 1]."""
    ps, pn = np.abs(speech_spec) ** 2, np.abs(mix_spec - speech_spec) ** 2
    if resolution == "bands":
        ps, pn = band_power(ps).T, band_power(pn).T
    g = np.clip(np.sqrt(ps / (ps + pn + 1e-20)), 10 ** (floor_db / 20), 1.0)
    return bin_map() @ g if resolution == "bands" else g


def oracle(mixture, speech, resolution, floor_db=ORACLE_FLOOR_DB):
    """The mixture through the ideal gate that knows its parts (oracle_gains). What a gate at that resolution could
    do at best (issue #37, part 2, session 10)."""
    sft = stft()
    m = sft.stft(np.asarray(mixture, np.float32))
    g = oracle_gains(m, sft.stft(np.asarray(speech, np.float32)), resolution, floor_db)
    return sft.istft(m * g, k1=len(mixture)).astype(np.float32)


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("weights")
    ap.add_argument("input")
    ap.add_argument("output")
    a = ap.parse_args(argv)
    import soundfile
    from hotphrase import dataset as D
    g = Gate(a.weights)
    y = g(np.clip(np.round(D.read_audio(a.input) * INT16_SCALE), -32768, 32767).astype(np.int16))
    soundfile.write(a.output, y, SR, subtype="PCM_16")


if __name__ == "__main__":
    sys.exit(main())
