"""The stop word's head on held-out real speakers, quickly and in Python (the room benchmark through the speaker's
own canceller is tools/bench's; tools/hotphrase/README.md, "The stop word"):

  python -m hotphrase.evaluate_stop WORKDIR [--head DIR] [--thresholds 0.5 0.7 ...] [--json OUT]

Every held-out real "stop" clip (hotphrase.get_stop_clips' eval side), cut to its speech, in a random simulated
room (exponential RIR), with 1.5 s of held-out noise at 30 dB under it before and after, alone and over the
speaker's own sound (held-out sentences in its espeak-ng voice, or its ring; other rooms) at echo-to-speech
ratios of -20 dB (about what the canceller leaves), -10, 0, +10 and +20 dB (no canceller at all): the share
missed (no score at the threshold from the word's start to 1.5 s after its end). Also the held-out other command
words (same speakers' side) in a quiet room: the share that fires (a person saying "go" or "off" over an answer).
"""
import json
import os
import sys

import numpy as np

from . import augment as A
from . import cli
from . import dataset as D
from . import e1data
from . import embedding as E
from . import get_stop_clips as G
from . import train_stop as S
from .constants import SAMPLE_RATE as SR
from .constants import STEP_SECONDS

ESRS = [None, -20, -10, 0, 10, 20]  # None: no own sound


def found(scores, steps, start, end, thr):
    """Whether a score reaches thr from the word's start to 1.5 s after its end (samples)."""
    t = (np.asarray(steps) * (SR * STEP_SECONDS) + E.step_end_sample(0))  # the sample each step has heard up to
    ok = (t >= start) & (t <= end + int(1.5 * SR))
    return bool(np.any(scores[ok] >= thr))


def render(rng, clip, own, esr, banks):
    x = A.reverb(clip, A.room_ir(rng))[: len(clip) + SR // 4] if rng.random() < 0.9 else clip
    pre, post = int(1.5 * SR), int(1.5 * SR)
    audio = np.concatenate([np.zeros(pre, np.float32), x.astype(np.float32), np.zeros(post, np.float32)])
    start, end = pre, pre + len(x)
    noise = banks.noise(rng, len(audio))
    audio = audio + noise * np.sqrt(A.active_power(x) / (np.mean(noise ** 2) + 1e-12) / 10 ** 3.0)
    if esr is not None:
        audio = S.over_own(rng, audio, start, end, own, esr=esr)
    else:
        audio = A.set_level(rng, audio)
    return audio, start, end


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("workdir")
    ap.add_argument("--head", help="the head folder (default WORKDIR/stop/head)")
    ap.add_argument("--thresholds", type=float, nargs="+")
    ap.add_argument("--json")
    ap.add_argument("--seed", type=int, default=61)
    a = ap.parse_args(argv)
    head_dir = a.head or os.path.join(a.workdir, "stop", "head")
    head, arrays = E.load_head(head_dir)
    thrs = a.thresholds or [head["threshold"]]
    root = os.path.join(a.workdir, "stop-real")
    clips = [(S.trim_active(D.read_audio(p)), spk) for p, spk in G.files(root, "eval")]
    others = [(S.trim_active(D.read_audio(p)), w) for w in G.words(root) if w != "stop" for p, _ in G.files(root, "eval", w)]
    z = e1data.load_ragged(os.path.join(a.workdir, "stop", "cache", "own_voice_eval.npz"))
    speech = [z[0][i:j, 0].astype(np.float32) for i, j in zip(z[1][:-1], z[1][1:])]
    rng = np.random.default_rng(a.seed)
    own = S.Own(rng, speech, S.timer_ring(), 600)
    banks = D.Banks(rng, A.EVAL_NOISES, 60, [s * 0.1 for s in speech[:50]])
    fe = e1data.frontend()
    report = {"head": head_dir, "clips": len(clips), "speakers": len({s for _, s in clips}), "thresholds": thrs,
              "missed": {}, "other_words_fired": {}}
    print(f"{len(clips)} held-out clips, {report['speakers']} speakers; thresholds {thrs}")
    for esr in ESRS:
        miss = np.zeros(len(thrs), int)
        for clip, _ in clips:
            audio, start, end = render(rng, clip, own, esr, banks)
            sc, steps = E.head_scores(head, arrays, fe(audio))
            for k, t in enumerate(thrs):
                miss[k] += not found(sc, steps, start, end, t)
        name = "quiet room" if esr is None else f"own sound at ESR {esr:+d} dB"
        report["missed"][name] = [round(100 * m / len(clips), 1) for m in miss]
        print(f"{name:26s} missed " + " ".join(f"{100 * m / len(clips):5.1f} %" for m in miss), flush=True)
    fired = np.zeros(len(thrs), int)
    for clip, _ in others:
        audio, start, end = render(rng, clip, own, None, banks)
        sc, steps = E.head_scores(head, arrays, fe(audio))
        for k, t in enumerate(thrs):
            fired[k] += found(sc, steps, start, end, t)
    report["other_words_fired"] = {"clips": len(others), "percent": [round(100 * f / len(others), 2) for f in fired]}
    print(f"other words ({len(others)} clips) fired " + " ".join(f"{100 * f / len(others):5.2f} %" for f in fired))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
