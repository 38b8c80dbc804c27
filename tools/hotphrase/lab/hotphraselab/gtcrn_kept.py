"""What GTCRN (gtcrn.py) keeps of the keyword and of the noise in the evaluation's 10 dB mixtures (issue #37,
part 2, session 9b): why babble misses rise through it. The same for the dominant-talker gate (talker_gate.py,
session 10) when MODEL is its weights file (.npz): its own gains, applied to each part as to the mixture; and for
the ideal gate (MODEL oracle:bands or oracle:bins, talker_gate.oracle_gains: session 11), what a gate could keep.

  python -m hotphraselab.gtcrn_kept WORKDIR MODEL.onnx|GATE.npz|oracle:RES [--word jarvis] [--clips 48] [--snr 10]
                                 [--rirs ROOMS.npz] [--enrol-from SPEAKERS.json [--wrong-voice]]

Each of the keyword's first CLIPS real clips is rendered as household_conditions renders the 10 dB condition
(LEAD samples of silence, the clip, TAIL samples of silence, one held-out noise family mixed over it all at SNR dB
over the clip's active power), once per family, and the mixture goes through GTCRN. The model's output spectrum
divided by the mixture's, bin by bin, is the gain it applied; applied to the keyword and to the noise alone, it
says how much of each it let through (the power kept, dB: 0 = all of it). Printed per noise family: the keyword's
power kept over the clip's own span, the noise's power kept over the whole rendering and over the lead alone (the
2 s before the clip, where the noise is all there is; the embedding frames that hold the keyword do not reach back
into it: BENCHMARKS.md, issue #37 part 2 session 11), and the SNR over the clip's span before and after. With --rirs (room_rirs' rooms, one
per clip in turn as household_conditions' room-snrN renders them) the keyword is the clip as the room gives it.

A gate conditioned on the enrolled voice (talker_gate.py, session 12) needs --enrol-from (cluster_speakers' output
for the keyword): each clip's gate is enrolled by talker_gate.enrollment_sets' rule, on 3 other clips of the same
speaker, clean, as the household's takes would be; a clip whose speaker has no other clip is left out (counted).
With --wrong-voice, the control: the enrollment is 3 clips of another speaker, so what the gate keeps with the
right voice against the wrong one says how much it uses the voice.
"""
import numpy as np

from hotphrase import augment as A
from hotphrase import cli
from hotphrase import dataset as D
from hotphrase.errors import HotPhraseError

from . import gtcrn
from .talker_gate import enrollment_audio, enrollment_sets


def db(a, b):
    return 10 * np.log10((np.sum(np.asarray(a, np.float64) ** 2) + 1e-20) /
                         (np.sum(np.asarray(b, np.float64) ** 2) + 1e-20))


def shares(s, n, s_out, n_out, span):
    """(speech kept over span, noise kept over all, SNR over span before, after, noise kept before span), dB."""
    lead = slice(0, span.start)
    return (db(s_out[span], s[span]), db(n_out, n), db(s[span], n[span]), db(s_out[span], n_out[span]),
            db(n_out[lead], n[lead]))


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


def oracle_kept(resolution, s, n, span):
    """kept() for the ideal gate at `resolution` (talker_gate.oracle_gains), which knows s apart from n."""
    from . import talker_gate as G
    sft = G.stft()
    ss, sn = sft.stft(s), sft.stft(n)
    gain = G.oracle_gains(ss + sn, ss, resolution)
    return shares(s, n, sft.istft(gain * ss, k1=len(s)), sft.istft(gain * sn, k1=len(s)), span)


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("workdir")
    ap.add_argument("model")
    ap.add_argument("--word", default="jarvis")
    ap.add_argument("--clips", type=int, default=48)
    ap.add_argument("--snr", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--rirs", help="room_rirs' rooms: each clip through one in turn, as household_conditions' room-snrN")
    ap.add_argument("--enrol-from", metavar="SPEAKERS.json",
                    help="a conditioned gate: each clip's gate enrolled on other clips of its speaker")
    ap.add_argument("--wrong-voice", action="store_true", help="with --enrol-from: enrolled on another speaker")
    a = ap.parse_args(argv)
    from hotphrase.evaluate_format2 import eval_banks
    from hotphrase.household_conditions import LEAD, TAIL, read_rirs, reverberant
    _, banks, _ = eval_banks(a.workdir)
    every = D.real_clips(a.word, None)
    clips = every[:a.clips]
    if not clips:
        raise HotPhraseError(a.word, "no clips")
    if a.wrong_voice and not a.enrol_from:
        raise HotPhraseError("--wrong-voice", "needs --enrol-from")
    sets = None
    if a.enrol_from:
        import json
        with open(a.enrol_from) as f:
            labels = json.load(f)["keywords"].get(a.word)
        if not labels or len(labels) != len(every):
            raise HotPhraseError(a.enrol_from, f"no speakers of {a.word}'s {len(every)} clips in it")
        sets = enrollment_sets(sorted(labels), labels, a.wrong_voice)
    rooms = read_rirs(a.rirs) if a.rirs else []
    if a.model.startswith("oracle:"):
        res = a.model.split(":", 1)[1]
        from .talker_gate import RESOLUTIONS
        if res not in RESOLUTIONS:
            raise HotPhraseError(a.model, f"want oracle:{' or oracle:'.join(sorted(RESOLUTIONS))}")
        enh, measure, name = res, oracle_kept, f"the ideal gate ({res})"
    elif a.model.endswith(".npz"):
        from .talker_gate import Gate
        enh, measure, name = Gate(a.model), gate_kept, "the talker gate"
        if enh.conditioned != bool(sets):
            raise HotPhraseError(a.model, "a gate conditioned on a voice needs --enrol-from, and only it takes it")
        if sets:
            name += " enrolled on " + ("another speaker's clips" if a.wrong_voice else "the speaker's other clips")

            def enrolled(k):
                enh.enrol(enrollment_audio([every[j] for j in sets[k]]))
                return enh
    else:
        enh, measure, name = gtcrn.Enhancer(a.model), kept, "GTCRN"
    rng = np.random.default_rng(a.seed)
    where = f", in {len(rooms)} rooms in turn" if rooms else ""
    keep = [i for i in range(len(clips)) if sets is None or sets[i]]
    print(f"{a.word}: {len(keep)} clips ({len(clips) - len(keep)} without an enrollment left out), {a.snr:g} dB{where}; "
          f"power kept by {name}'s gain (dB), mean over clips")
    print("| noise | keyword kept (its span) | noise kept | noise kept in the lead | SNR before / after (the clip's span) |")
    print("|---|---|---|---|---|")
    for kind in A.EVAL_NOISES:
        rows = []
        for i, x in enumerate(clips):
            x, tail = np.asarray(x, np.float32), TAIL
            if rooms:
                m, h = rooms[i % len(rooms)]
                x, tail = reverberant(x, h, m["direct_path_samples"]), 0
            s = np.concatenate([np.zeros(LEAD, np.float32), x, np.zeros(tail, np.float32)])
            n = A.mix(s, A.crop(rng, banks.b[kind], len(s)), a.snr) - s  # the noise as mixed
            if i in keep:
                rows.append(measure(enrolled(i) if sets else enh, s, n, slice(LEAD, LEAD + len(x))))
        k, nk, before, after, lead = np.mean(rows, axis=0)
        print(f"| {kind} | {k:.1f} | {nk:.1f} | {lead:.1f} | {before:.1f} / {after:.1f} |", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
