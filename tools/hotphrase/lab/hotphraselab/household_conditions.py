"""hotphrase.household_conditions with the lab's front ends (frontends.py) and three options of its own: the ideal
gate, a front end's warm-up and a gate enrolled on the speaker's voice (issue #37, part 2, sessions 10-12).

  python -m hotphraselab.household_conditions WORKDIR OUT [household_conditions' options] [--frontend FE]
         [--oracle bands|bins [--oracle-early MS] [--oracle-where all|lead|keyword]] [--warm-up S]
         [--enrol-from SPEAKERS.json]

With `--frontend speex-denoise[:DB]` (session 6; speex.py), `gtcrn:ONNX_PATH`, `gate:WEIGHTS_NPZ` or `wpe` every
rendering (a clip with its lead-in, or a whole test-side stream) goes through that front end from its start before
it is embedded, as household_conditions' --frontend does; each file records its front end.

With `--oracle bands|bins` (session 10) the noisy conditions go through the ideal gate instead (talker_gate.oracle:
the clip's ideal ratio mask against the noise, per mel band or per FFT bin, at least -30 dB), what a gate at that
resolution could do at best; stamped oracle-bands / oracle-bins, and taken beside renderings without a front end
(on a clip without noise the ideal gate is no gate). With `--oracle-early MS` as well (session 11), in the room
conditions the ideal gate's wanted part is the clip through only the room's first MS ms after the direct path (the
same alignment and gain as the whole room's rendering), so that the late reverberation counts as noise: what a
gate that also takes the room's tail out could do at best; the room condition without noise is allowed then, and
the stamp is oracle-RES-earlyMS. With `--oracle-where lead` (or `keyword`) the ideal gate's output is taken only over
the LEAD samples before the clip (or only from the clip on), the rendering as it was elsewhere: how much of what
the ideal gate gives comes from silencing the noise before the person speaks, and how much from the keyword's own
span; stamped oracle-RES-lead / -keyword.

With `--warm-up S` (session 11; a front end's noisy conditions) the front end first hears the S seconds of the same
noise recording that come just before the rendering's own stretch of it, at the same gain, and runs on into the
rendering from there; the embedding sees the rendering alone, the same audio as without it. A speaker's front end
never starts cold: it has been listening to the room's radio or chatter for as long as they have been on, where the
rendering's LEAD gives it only 2 s. The files record it (`warm_up_s`).

With a gate conditioned on the enrolled voice (`--frontend gate:NPZ` of talker_gate_train --enrolled; session 12)
`--enrol-from SPEAKERS.json` (cluster_speakers' output) is needed: each clip's rendering, in every condition, goes
through the gate enrolled on 3 other clips of its speaker, clean (talker_gate.enrollment_sets), as a household's
takes would enrol it; household_eval enrols the takes' gate by the same rule. The files record it
(`enrolled_on`). The test side is not rendered through such a gate: whose voice it would be gated by is the
household's, one enrollment at a time, which household_eval does not yet measure (its --no-test-side).
"""
import json
import sys

import numpy as np

from hotphrase import cli
from hotphrase import frontend_registry as FR
from hotphrase import household_conditions as HC
from hotphrase.constants import SAMPLE_RATE as SR
from hotphrase.errors import HotPhraseError
from hotphrase.household_conditions import LEAD

from . import talker_gate


def early_part(x, h, direct, early_ms):
    """What reverberant(x, h, direct) holds of the room's first early_ms ms after the direct path: the clip through
    that part of h alone, at reverberant's own gain (so that the rest of the rendering is the late tail)."""
    from hotphrase import augment as A
    gain = np.sqrt(A.active_power(x) / A.active_power(HC._through(x, h, direct)))
    return (HC._through(x, h[:direct + int(early_ms * SR / 1000)], direct) * gain).astype(np.float32)


def condition_audio(word, cond, clips, banks, rooms, room_index=None, oracle=None, early_ms=None, where="all",
                    warm_s=0.0, warm=None):
    """household_conditions.condition_audio, and with `oracle` ("bands" or "bins"; a noisy condition only) each
    rendering through talker_gate.oracle, the ideal gate that knows the clip (as rendered, room and all) apart from
    the noise; with `early_ms` too, in a room the wanted part is the clip through the room's first early_ms ms only
    (early_part), so the late tail counts as noise; `where` ("lead", "keyword") keeps the ideal gate's output only
    before the clip or only from it on. With warm_s, each noisy rendering's warm-up (warm_up_noise) is appended to
    the list `warm` (None for a rendering without noise), the renderings themselves drawn exactly as without it."""
    def each(rendered, parts):
        wanted = None  # the oracle's wanted part, when it is not the rendered clip itself
        if parts["room"] is not None and oracle is not None and early_ms is not None:
            m, h = parts["room"]
            wanted = early_part(parts["clip"], h, m["direct_path_samples"], early_ms)
        if parts["noise"] is None:
            if warm is not None:
                warm.append(None)
            if wanted is not None:
                rendered = through_oracle(rendered, wanted, parts["tail"], oracle, where)
            return rendered
        bank, start, noise, snr = parts["noise"]
        if warm is not None:
            warm.append(warm_up_noise(bank, start, warm_s, noise, parts["heard"], parts["tail"], snr))
        if oracle is not None:
            rendered = through_oracle(rendered, parts["heard"] if wanted is None else wanted, parts["tail"], oracle,
                                      where)
        return rendered
    plain = oracle is None and warm is None
    return HC.condition_audio(word, cond, clips, banks, rooms, room_index, None if plain else each)


def warm_up_noise(bank, start, seconds, noise, x, tail, snr):
    """The `seconds` of the noise recording just before `start` (where the rendering's stretch `noise` begins;
    around the recording's end when it begins near its start), at the gain render(x, tail, noise=noise, snr=snr)
    gives `noise`."""
    from hotphrase import augment as A
    speech = np.concatenate([np.zeros(LEAD, np.float32), np.asarray(x, np.float32), np.zeros(tail, np.float32)])
    before = np.take(bank, np.arange(start - int(seconds * SR), start), mode="wrap")
    return (before * A.mix_gain(speech, noise[:len(speech)], snr)).astype(np.float32)


def through_oracle(rendered, wanted, tail, oracle, where):
    """A rendering through the ideal gate (talker_gate.oracle at resolution `oracle`) that knows its wanted part,
    `wanted` laid out as render lays out a clip (LEAD samples before it, `tail` after), kept where `where` says."""
    speech = np.concatenate([np.zeros(LEAD, np.float32), np.asarray(wanted, np.float32), np.zeros(tail, np.float32)])
    gated = np.clip(talker_gate.oracle(rendered, speech, oracle), -1.0, 32767 / 32768).astype(np.float32)
    return spliced(rendered, gated, where)


def spliced(plain, gated, where):
    """The ideal gate's output where it is asked for (oracle_where): everywhere, before the clip only (the LEAD
    samples), or from the clip on."""
    if where == "all":
        return gated
    if where == "lead":
        return np.concatenate([gated[:LEAD], plain[LEAD:]])
    if where == "keyword":
        return np.concatenate([plain[:LEAD], gated[LEAD:]])
    raise HotPhraseError("--oracle-where", f"{where!r}: want all, lead or keyword")


def stamped(audio, frontend, warm=None, enrol=None):
    """household_conditions.stamped, and with `warm` (a warm-up or None per rendering) the front end runs over the
    warm-up first and on into the rendering, of which only the rendering is kept; with `enrol` (a conditioned gate:
    per rendering the enrollment's audio), the gate is enrolled on it first."""
    if enrol is None and warm is None:
        return HC.stamped(audio, frontend)
    fe = FR.make(frontend)
    if enrol is not None:
        out = []
        for x, e in zip(audio, enrol):
            fe.enrol(e)
            out.append(FR.apply_float(fe, x))
        return out, {"frontend": np.array(FR.parse_frontend(frontend)),
                     "enrolled_on": np.array("3 other clips of the clip's speaker (talker_gate.enrollment_sets)")}
    if fe is not None:
        audio = [FR.apply_float(fe, x) if w is None else
                 FR.apply_float(fe, np.concatenate([w, x]))[len(w):] for x, w in zip(audio, warm)]
    return audio, {"frontend": np.array(FR.parse_frontend(frontend) or "none")}


class Lab:
    """What household_conditions.run asks of the lab: its options checked, and each keyword rendered with them."""

    def __init__(self, a):
        self.a = a
        self.speakers = None

    def check_options(self, rooms):
        a = self.a
        conditioned = bool(getattr(FR.make(a.frontend), "conditioned", False))
        if conditioned != bool(a.enrol_from):
            raise HotPhraseError("--enrol-from", "is for a gate conditioned on a voice, and such a gate needs it")
        if conditioned and (a.test_side_extra or a.test_side_real_speech):
            raise HotPhraseError("--test-side-extra", "not through a gate conditioned on a voice (whose voice?)")
        if conditioned and a.warm_up:
            raise HotPhraseError("--warm-up", "not with a gate conditioned on a voice")
        if a.enrol_from:
            with open(a.enrol_from) as f:
                self.speakers = json.load(f)["keywords"]
        if a.oracle_early is not None and not a.oracle:
            raise HotPhraseError("--oracle-early", "needs --oracle")
        if a.oracle_where != "all" and not a.oracle:
            raise HotPhraseError("--oracle-where", "needs --oracle")
        if a.oracle_early is not None and not 0 < a.oracle_early <= 200:
            raise HotPhraseError("--oracle-early", f"{a.oracle_early:g} ms: want more than 0, at most 200")
        if a.warm_up and (a.frontend == "none" or a.oracle):
            raise HotPhraseError("--warm-up", "is for a front end (--frontend): the embedding alone has no state to warm")
        if not 0 <= a.warm_up <= 60:
            raise HotPhraseError("--warm-up", f"{a.warm_up:g} s: want 0 to 60")
        if a.oracle and a.frontend != "none":
            raise HotPhraseError("--oracle", "is a front end of its own: not with --frontend")

    def check_conditions(self, conds):
        a = self.a
        if a.oracle and any("snr" not in c and not (a.oracle_early and "room" in c) for c in conds):
            raise HotPhraseError("--oracle", "only for noisy conditions (give --only with snrN, room-snrN, "
                                             "house-room-snrN): the ideal gate of a clip without noise is no gate")

    def renderings(self, a, word, clips, banks, rooms):
        """household_conditions.plain_renderings with the ideal gate, the warm-up and the enrolled gate."""
        enrol = None
        if self.speakers is not None:
            labels = self.speakers.get(word) or {}
            if len(labels) != len(clips):
                raise HotPhraseError(a.enrol_from, f"{len(labels)} clips of {word}, the folder has {len(clips)}")
            # a speaker of one clip (never enrolled by household_eval, only a guest there): enrolled on itself
            enrol = [talker_gate.enrollment_audio([clips[j] for j in (js or [i])])
                     for i, js in enumerate(talker_gate.enrollment_sets(sorted(labels), labels))]

        def render(cond, room_index):
            warm = [] if a.warm_up and "snr" in cond else None
            audio, used = condition_audio(word, cond, clips, banks, rooms, room_index, a.oracle, a.oracle_early,
                                          a.oracle_where, a.warm_up, warm)
            audio, fe = stamped(audio, a.frontend, warm, enrol)
            if warm is not None:
                fe["warm_up_s"] = np.float32(a.warm_up)
            if a.oracle:
                fe = {"frontend": np.array("oracle-" + a.oracle + (f"-early{a.oracle_early:g}" if a.oracle_early
                                                                   else "") +
                                           ("" if a.oracle_where == "all" else "-" + a.oracle_where))}
            return audio, used, fe
        return render


@cli.command
def main(argv=None):
    ap = HC.parser(__name__, __doc__ + "\nhousehold_conditions' own description:\n\n" + HC.__doc__)
    ap.add_argument("--oracle", choices=("bands", "bins"), default=None,
                    help="the noisy conditions (snrN, room-snrN, house-room-snrN) through the ideal gate that knows "
                         "the clip apart from the noise (talker_gate.oracle), recorded as front end oracle-bands or "
                         "oracle-bins; household_eval takes them beside renderings without a front end")
    ap.add_argument("--warm-up", type=float, default=0.0, metavar="S",
                    help="the front end first hears the S seconds of the noise before each noisy rendering's own")
    ap.add_argument("--oracle-where", choices=("all", "lead", "keyword"), default="all",
                    help="with --oracle: its output only before the clip (lead) or only from the clip on (keyword)")
    ap.add_argument("--oracle-early", type=float, default=None, metavar="MS",
                    help="with --oracle: in a room, the wanted part is the clip through the room's first MS ms "
                         "only, the late tail counted as noise (the room condition allowed too)")
    ap.add_argument("--enrol-from", metavar="SPEAKERS.json",
                    help="a gate conditioned on the voice: each clip's enrolled on 3 other clips of its speaker")
    a = ap.parse_args(argv)
    HC.run(a, Lab(a))


if __name__ == "__main__":
    sys.exit(main())
