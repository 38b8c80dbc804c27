"""What GTCRN (gtcrn.py) keeps of the keyword and of the noise in the evaluation's 10 dB mixtures (issue #37,
part 2, session 9b): why babble misses rise through it. The same for the dominant-talker gate (talker_gate.py,
session 10) when MODEL is its weights file (.npz): its own gains, applied to each part as to the mixture.

  python -m hotphrase.gtcrn_kept WORKDIR MODEL.onnx|GATE.npz [--word jarvis] [--clips 48] [--snr 10]

Each of the keyword's first CLIPS real clips is rendered as household_conditions renders the 10 dB condition
(LEAD samples of silence, the clip, TAIL samples of silence, one held-out noise family mixed over it all at SNR dB
over the clip's active power), once per family, and the mixture goes through GTCRN. The model's output spectrum
divided by the mixture's, bin by bin, is the gain it applied; applied to the keyword and to the noise alone, it
says how much of each it let through (the power kept, dB: 0 = all of it). Printed per noise family: the keyword's
power kept over the clip's own span, the noise's power kept over the whole rendering, and the SNR over the clip's span before and after.
"""
import numpy as np

from . import cli
from . import augment as A
from . import dataset as D
from . import gtcrn
from .errors import HotPhraseError


def db(a, b):
    return 10 * np.log10((np.sum(np.asarray(a, np.float64) ** 2) + 1e-20) /
                         (np.sum(np.asarray(b, np.float64) ** 2) + 1e-20))


def shares(s, n, s_out, n_out, span):
    """(speech kept over span, noise kept over all, SNR over span before, after), dB."""
    return db(s_out[span], s[span]), db(n_out, n), db(s[span], n[span]), db(s_out[span], n_out[span])


def kept(enh, s, n, span):
    """(keyword's power kept over `span`, noise's power kept over all, SNR over `span` before, after), in dB, for
    the speech s and the noise n mixed: the enhancer `enh` (gtcrn.Enhancer, or anything with its spectra()) runs over
    s + n, and its output over its input, bin by bin, is the gain applied to s and to n alone."""
    xm = gtcrn.analyse(s + n)
    gain = enh.spectra(xm) / np.where(np.abs(xm) < 1e-9, 1e-9, xm)
    s_out = gtcrn.synthesise(gain * gtcrn.analyse(s), len(s))
    n_out = gtcrn.synthesise(gain * gtcrn.analyse(n), len(s))
    return shares(s, n, s_out, n_out, span)


def gate_kept(gate, s, n, span):
    """kept() for a talker_gate.Gate: the gains it computes from s + n, applied to s and to n alone."""
    gain = gate.bin_gains(gate.sft.stft(s + n))
    s_out = gate.sft.istft(gain * gate.sft.stft(s), k1=len(s))
    n_out = gate.sft.istft(gain * gate.sft.stft(n), k1=len(s))
    return shares(s, n, s_out, n_out, span)


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("workdir")
    ap.add_argument("model")
    ap.add_argument("--word", default="jarvis")
    ap.add_argument("--clips", type=int, default=48)
    ap.add_argument("--snr", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=37)
    a = ap.parse_args(argv)
    from .evaluate_format2 import eval_banks
    from .household_conditions import LEAD, TAIL
    _, banks, _ = eval_banks(a.workdir)
    clips = D.real_clips(a.word, None)[:a.clips]
    if not clips:
        raise HotPhraseError(a.word, "no clips")
    if a.model.endswith(".npz"):
        from .talker_gate import Gate
        enh, measure, name = Gate(a.model), gate_kept, "the talker gate"
    else:
        enh, measure, name = gtcrn.Enhancer(a.model), kept, "GTCRN"
    rng = np.random.default_rng(a.seed)
    print(f"{a.word}: {len(clips)} clips, {a.snr:g} dB; power kept by {name}'s gain (dB), mean over clips")
    print("| noise | keyword kept (its span) | noise kept | SNR before / after (the clip's span) |")
    print("|---|---|---|---|")
    for kind in A.EVAL_NOISES:
        rows = []
        for x in clips:
            s = np.concatenate([np.zeros(LEAD, np.float32), np.asarray(x, np.float32), np.zeros(TAIL, np.float32)])
            n = A.mix(s, A.crop(rng, banks.b[kind], len(s)), a.snr) - s  # the noise as mixed
            rows.append(measure(enh, s, n, slice(LEAD, LEAD + len(x))))
        k, nk, before, after = np.mean(rows, axis=0)
        print(f"| {kind} | {k:.1f} | {nk:.1f} | {before:.1f} / {after:.1f} |", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
