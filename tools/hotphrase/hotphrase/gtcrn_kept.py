"""What GTCRN (gtcrn.py) keeps of the keyword and of the noise in the evaluation's 10 dB mixtures (issue #37,
part 2, session 9b): why babble misses rise through it.

  python -m hotphrase.gtcrn_kept WORKDIR MODEL.onnx [--word jarvis] [--clips 48] [--snr 10]

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
    enh = gtcrn.Enhancer(a.model)
    rng = np.random.default_rng(a.seed)
    print(f"{a.word}: {len(clips)} clips, {a.snr:g} dB; power kept by GTCRN's gain (dB), mean over clips")
    print("| noise | keyword kept (its span) | noise kept | SNR before / after (the clip's span) |")
    print("|---|---|---|---|")
    for kind in A.EVAL_NOISES:
        ks, ns, snr0, snrs = [], [], [], []
        for x in clips:
            s = np.concatenate([np.zeros(LEAD, np.float32), np.asarray(x, np.float32), np.zeros(TAIL, np.float32)])
            n = A.mix(s, A.crop(rng, banks.b[kind], len(s)), a.snr) - s  # the noise as mixed
            m = s + n
            xm = gtcrn.analyse(m)
            gain = enh.spectra(xm) / np.where(np.abs(xm) < 1e-9, 1e-9, xm)
            s_out = gtcrn.synthesise(gain * gtcrn.analyse(s), len(s))
            n_out = gtcrn.synthesise(gain * gtcrn.analyse(n), len(s))
            span = slice(LEAD, LEAD + len(x))
            ks.append(10 * np.log10(np.sum(s_out[span] ** 2) / np.sum(s[span] ** 2)))
            ns.append(10 * np.log10(np.sum(n_out ** 2) / np.sum(n ** 2)))
            snr0.append(10 * np.log10(np.sum(s[span] ** 2) / (np.sum(n[span] ** 2) + 1e-12)))
            snrs.append(10 * np.log10(np.sum(s_out[span] ** 2) / (np.sum(n_out[span] ** 2) + 1e-12)))
        print(f"| {kind} | {np.mean(ks):.1f} | {np.mean(ns):.1f} | {np.mean(snr0):.1f} / {np.mean(snrs):.1f} |", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
