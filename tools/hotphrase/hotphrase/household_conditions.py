"""The real keyword clips in noise and in simulated rooms, for household_eval's --condition (issue #37, "Honest
evaluation": the test side in noise at 0, 5 and 10 dB and in simulated rooms, enrollment clean).

  python -m hotphrase.household_conditions WORKDIR OUT [--words WORD ...] [--snr 0 5 10] [--rirs ROOMS.npz]
                                           [--room-snr 10] [--procs N]

Each clip of a real keyword folder is rendered as evaluate_format2's clean set renders it (2 s before it, 0.3 s of
digital silence after it; real_keyword_set) and embedded the same way, in sorted file order, into
OUT/COND/e1_eval_real_WORD.npz (emb + offsets, as WORKDIR/cache/e1_eval_real_WORD.npz), where COND is
  snrN        the clip dry, in held-out noise at N dB SNR over the whole rendering (the clip's active power over
              the noise's mean power, augment.mix): the evaluation's four noise families, never trained on (fan,
              street, plucked music, babble of held-out voices; heldout.banks), one per clip in turn
  room        (with --rirs, from room_rirs) the clip through a room's impulse response, person to microphone:
              the 12 rooms and distances (RT60 0.2-0.8 s, 1-3 m) one per clip in turn, aligned on the direct
              path and scaled back to the dry clip's active power (a fixed gain: the level is not what is
              measured), then before it held-out fan noise at its own noise floor as the clean set has
  room-snrN   the room's rendering in held-out noise at N dB (--room-snr)
  house-room, house-room-snrN
              (with --rirs and --house SPEAKERS.json, issue #37, part 2, session 7) as room and room-snrN, but each
              clip through its speaker's own room (a household lives in one): house_rooms
  clean       (with --clean) the clip as evaluate_format2's clean set renders it (held-out fan noise before it at
              its own floor) but drawn from this module's seed: the clean set on a machine without evaluate_format2's
              caches, and through a --frontend
Everything is drawn from seeds fixed per keyword and condition, so a rerun writes the same audio.

With `--frontend speex-denoise[:DB]` (issue #37, part 2, session 6; speex.py) every rendering (a clip with its lead-in,
or a whole test-side stream) goes through libspeexdsp's noise suppressor from its start before it is embedded, as a
front end ahead of the speaker's embedding would run; each file records its front end (`frontend`), and
household_eval uses a file only with the same --frontend. Give each front end its own OUT.

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

  python -m hotphrase.household_conditions WORKDIR OUT --words --test-side-extra DIR ... [--test-side-real-speech]
                                           --snr 10 --rirs ROOMS.npz --room-snr 10 --only snr10 room-snr10

renders household_eval's test side (the format-2 evaluation's caches (evaluate_format2) of held-out real streams: e1_eval_extra_TAG.npz of
get_public_negatives' eval folders, e1_eval_neg_realspeech.npz) in the same conditions, into
OUT/COND/<the same file name>: each stream rebuilt piece by piece from the same seed as evaluate_format2 builds it (the
same recordings, order, gaps, quiet noise and levels), then every piece (a recording with its gaps) in the
condition on its own: through the rooms one per piece in turn (the tail past the piece's own trailing gap cut,
so the stream keeps its length), in the four noise families one per piece in turn at N dB over that piece's
active power (the pieces' levels differ by up to 32 dB, so one SNR over a whole stream would not be N dB for most
of them).
"""
import copy
import json
import os
import sys
import zlib

import numpy as np

from . import augment as A
from . import cli
from . import dataset as D
from . import e1data
from . import heldout
from hotphraselab import talker_gate
from .constants import SAMPLE_RATE as SR
from .errors import HotPhraseError

LEAD = int(heldout.REAL_LEAD_SECONDS * SR)
TAIL = int(heldout.REAL_TAIL_SECONDS * SR)


def _through(x, h, direct):
    """x through h, aligned on the direct path at sample `direct`: len(x) + TAIL samples."""
    from scipy.signal import fftconvolve  # np.convolve is direct: minutes a keyword for the 0.8 s rooms
    y = fftconvolve(x.astype(np.float64), h.astype(np.float64))[direct:direct + len(x) + TAIL]
    return np.pad(y, (0, len(x) + TAIL - len(y)))


def reverberant(x, h, direct):
    """The clip as the microphone hears it through h (aligned on the direct path at sample `direct`), len(x) +
    TAIL samples (the room's tail runs into the silence after it), at the dry clip's active power."""
    y = _through(x, h, direct)
    return (y * np.sqrt(A.active_power(x) / A.active_power(y))).astype(np.float32)


def early_part(x, h, direct, early_ms):
    """What reverberant(x, h, direct) holds of the room's first early_ms ms after the direct path: the clip through
    that part of h alone, at reverberant's own gain (so that the rest of the rendering is the late tail)."""
    gain = np.sqrt(A.active_power(x) / A.active_power(_through(x, h, direct)))
    return (_through(x, h[:direct + int(early_ms * SR / 1000)], direct) * gain).astype(np.float32)


def render(x, tail, lead=None, noise=None, snr=None):
    """LEAD samples, then x, then `tail` samples of digital silence. Without noise the LEAD samples are `lead`
    (the clean set's held-out fan noise at the clip's floor); with it, they are silence and `noise` (at least as
    long) is mixed over the whole rendering at `snr` dB over the clip's active power (augment.mix)."""
    out = np.concatenate([np.zeros(LEAD, np.float32), np.asarray(x, np.float32), np.zeros(tail, np.float32)])
    if noise is None:
        out[:LEAD] = lead
    else:
        out = A.mix(out, np.asarray(noise[:len(out)], np.float32), snr)
    return np.clip(out, -1.0, 32767 / 32768).astype(np.float32)


def floor_lead(rng, fan, x):
    """The clean set's lead-in: held-out fan noise at the clip's own noise floor (its first 50 ms)."""
    lead = A.crop(rng, fan, LEAD)
    return lead * np.sqrt(np.mean(x[:800] ** 2) + 1e-10) / (np.sqrt(np.mean(lead ** 2)) + 1e-9)


def read_rirs(path):
    z = np.load(path)
    meta = json.loads(str(z["meta"]))
    if not meta:
        raise HotPhraseError(path, "no rooms in it")
    return [(m, z[m["key"]]) for m in meta]


def conditions(snrs, rooms, room_snrs, clean=False):
    out = (["clean"] if clean else []) + [f"snr{s:g}" for s in snrs]
    if rooms:
        out += ["room"] + [f"room-snr{s:g}" for s in room_snrs]
    return out


def house_rooms(labels, rooms_per_distance=3):
    """A room index (into read_rirs' list: 4 rooms x 3 distances, room-major) for each clip, given each clip's
    speaker label in sorted clip order: the speaker's room is its label mod 4, the distance (1, 2, 3 m) the clip's
    place among that speaker's clips mod 3 (a person is heard from across the room and from near it in turn)."""
    seen, out = {}, []
    for lab in labels:
        k = seen.get(lab, 0)
        seen[lab] = k + 1
        out.append((int(lab) % 4) * rooms_per_distance + k % rooms_per_distance)
    return out


def room_of(i, rooms, room_index):
    return rooms[room_index[i] if room_index is not None else i % len(rooms)]


def clip_labels(cond, n, kinds, rooms, room_index=None):
    """What condition_audio draws for each of n clips, in order: the room's key and/or the noise family ("clean"
    for the clean set), by the same turn (clip i: rooms[i % 12], kinds[i % 4]). Saved beside the embeddings
    (`labels`) so that household_eval can break misses down by room and noise family."""
    out = []
    for i in range(n):
        parts = []
        if "room" in cond:
            parts.append(room_of(i, rooms, room_index)[0]["key"])
        if "snr" in cond:
            parts.append(kinds[i % len(kinds)])
        out.append("+".join(parts) or "clean")
    return out


def condition_audio(word, cond, clips, banks, rooms, room_index=None, oracle=None, early_ms=None, where="all",
                    warm_s=0.0, warm=None):
    """Each clip rendered in condition `cond` (see the module's doc), in order, and a summary of what was drawn;
    `room_index` (house_rooms) picks each clip's room instead of the rooms in turn. With `oracle` ("bands" or
    "bins"; a noisy condition only) each rendering goes through talker_gate.oracle, the ideal gate that knows the
    clip (as rendered, room and all) apart from the noise; with `early_ms` too, in a room the wanted part is the clip
    through the room's first early_ms ms only (early_part), so the late tail counts as noise; `where` ("lead",
    "keyword") keeps the ideal gate's output only before the clip or only from it on. With warm_s, each noisy
    rendering's warm-up (warm_up_noise) is appended to the list `warm` (None for a rendering without noise), the
    renderings themselves drawn exactly as without it."""
    rng = np.random.default_rng(zlib.crc32(f"{word}/{cond}".encode()))
    fan = banks.b["fan"]
    kinds = list(banks.kinds)
    audio, used = [], {}
    for i, x in enumerate(clips):
        snr = float(cond.rsplit("snr", 1)[1]) if "snr" in cond else None
        wanted = None  # the oracle's wanted part, when it is not the rendered clip itself
        if "room" in cond:
            m, h = room_of(i, rooms, room_index)
            if oracle is not None and early_ms is not None:
                wanted = early_part(x, h, m["direct_path_samples"], early_ms)
            x = reverberant(x, h, m["direct_path_samples"])
            tail = 0
            used[m["key"]] = used.get(m["key"], 0) + 1
        else:
            tail = TAIL
        if snr is None:
            if warm is not None:
                warm.append(None)
            clean = render(x, tail, lead=floor_lead(rng, fan, x))
            if wanted is not None:
                clean = through_oracle(clean, wanted, tail, oracle, where)
            audio.append(clean)
        else:
            kind = kinds[i % len(kinds)]
            used[kind] = used.get(kind, 0) + 1
            noise, start = A.crop_from(rng, banks.b[kind], LEAD + len(x) + tail)
            mixed = render(x, tail, noise=noise, snr=snr)
            if warm is not None:
                warm.append(warm_up_noise(banks.b[kind], start, warm_s, noise, x, tail, snr))
            if oracle is not None:
                mixed = through_oracle(mixed, x if wanted is None else wanted, tail, oracle, where)
            audio.append(mixed)
    return audio, used


def warm_up_noise(bank, start, seconds, noise, x, tail, snr):
    """The `seconds` of the noise recording just before `start` (where the rendering's stretch `noise` begins;
    around the recording's end when it begins near its start), at the gain render(x, tail, noise=noise, snr=snr)
    gives `noise`."""
    speech = np.concatenate([np.zeros(LEAD, np.float32), np.asarray(x, np.float32), np.zeros(tail, np.float32)])
    before = np.take(bank, np.arange(start - int(seconds * SR), start), mode="wrap")
    return (before * A.mix_gain(speech, noise[:len(speech)], snr)).astype(np.float32)


def through_oracle(rendered, wanted, tail, oracle, where):
    """A rendering through the ideal gate (talker_gate.oracle at resolution `oracle`) that knows its wanted part,
    `wanted` laid out as render lays out a clip (LEAD samples before it, `tail` after), kept where `where` says."""
    from hotphraselab.talker_gate import oracle as ideal
    speech = np.concatenate([np.zeros(LEAD, np.float32), np.asarray(wanted, np.float32), np.zeros(tail, np.float32)])
    gated = np.clip(ideal(rendered, speech, oracle), -1.0, 32767 / 32768).astype(np.float32)
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


def stream_pieces(rng, pieces, banks, quiet):
    """dataset.stream(rng, pieces, banks, 0, quiet=quiet)'s audio as its pieces, in stream order, drawing the same
    random numbers (no noise stretch after them), so that their concatenation is that stream."""
    order = rng.permutation(len(pieces))
    return [D.negative_piece(rng, pieces[i], banks, quiet=quiet)[0] for i in order]


def condition_piece(a, cond, i, rng, banks, rooms):
    """Piece i of a test-side stream in condition cond (the module's doc), at its own length."""
    snr = float(cond.rsplit("snr", 1)[1]) if "snr" in cond else None
    if cond.startswith("room"):
        m, h = rooms[i % len(rooms)]
        a = reverberant(a, h, m["direct_path_samples"])[:len(a)]
    if snr is not None:
        kind = list(banks.kinds)[i % len(banks.kinds)]
        a = A.mix(a, A.crop(rng, banks.b[kind], len(a)), snr)
    return np.clip(a, -1.0, 32767 / 32768).astype(np.float32)


def test_side_sets(workdir, extra_folders, real_speech):
    """[(cache file name, [stream's clips] x up to 8, the recordings)] as evaluate_format2's negative_sets and
    extra_eval_set group them; each set's streams draw from a fresh copy of eval_banks' generator, as there."""
    from .evaluate_format2 import REAL_STREAMS, extra_eval_files
    out = []
    for folder in extra_folders:
        files, tag = extra_eval_files(workdir, folder)
        clips = [D.read_audio(f) for f in files]
        n = min(REAL_STREAMS, len(clips))
        out.append((f"e1_eval_extra_{tag}.npz", [clips[i::n] for i in range(n)], len(files)))
    if real_speech:
        rs = [x for x, _, _ in D.real_speech("eval")]
        out.append(("e1_eval_neg_realspeech.npz", [rs[i::REAL_STREAMS] for i in range(REAL_STREAMS)], len(rs)))
    return out


def stamped(audio, frontend, warm=None, enrol=None):
    """The renderings through the front end (speex.make's; None: as they are) and the file's `frontend` entry; with
    `warm` (a warm-up or None per rendering), the front end runs over the warm-up first and on into the rendering,
    of which only the rendering is kept; with `enrol` (a conditioned gate: per rendering the enrollment's audio),
    the gate is enrolled on it first."""
    from hotphraselab import speex
    fe = speex.make(frontend)
    if enrol is not None:
        out = []
        for x, e in zip(audio, enrol):
            fe.enrol(e)
            out.append(speex.apply_float(fe, x))
        return out, {"frontend": np.array(speex.parse_frontend(frontend)),
                     "enrolled_on": np.array("3 other clips of the clip's speaker (talker_gate.enrollment_sets)")}
    if fe is not None:
        if warm is None:
            audio = [speex.apply_float(fe, x) for x in audio]
        else:
            audio = [speex.apply_float(fe, x) if w is None else
                     speex.apply_float(fe, np.concatenate([w, x]))[len(w):] for x, w in zip(audio, warm)]
    return audio, {"frontend": np.array(speex.parse_frontend(frontend) or "none")}


def render_test_side(workdir, out, extra_folders, real_speech, conds, rooms, procs, frontend=None):
    from .evaluate_format2 import REAL_QUIET, embed_all, eval_banks
    rng0, banks, _ = eval_banks(workdir)
    for name, groups, n_files in test_side_sets(workdir, extra_folders, real_speech):
        todo = [c for c in conds if not os.path.exists(os.path.join(out, c, name))]
        if not todo:
            continue
        rng = copy.deepcopy(rng0)
        streams = [stream_pieces(rng, g, banks, REAL_QUIET) for g in groups]
        for cond in todo:
            crng = np.random.default_rng(zlib.crc32(f"test-side/{name}/{cond}".encode()))
            audio, i = [], 0
            for pieces in streams:
                rendered = []
                for p in pieces:
                    rendered.append(condition_piece(p, cond, i, crng, banks, rooms))
                    i += 1
                audio.append(np.concatenate(rendered))
            path = os.path.join(out, cond, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            audio, fe = stamped(audio, frontend)
            e1data.save_ragged(path + ".tmp.npz", embed_all(audio, procs), files=np.array(n_files), **fe)
            os.replace(path + ".tmp.npz", path)
            hours = sum(len(x) for x in audio) / SR / 3600
            print(f"{path}: {len(audio)} streams, {i} recordings, {hours:.2f} h", flush=True)


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("workdir")
    ap.add_argument("out")
    ap.add_argument("--words", nargs="*", default=["computer", "jarvis", "snowboy", "view-glass"])
    ap.add_argument("--snr", nargs="*", type=float, default=[0, 5, 10])
    ap.add_argument("--rirs", help="room_rirs' output; without it, no room conditions")
    ap.add_argument("--room-snr", nargs="*", type=float, default=[10])
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--clean", action="store_true",
                    help="also the clean condition (as evaluate_format2's clean set, from this module's seed)")
    ap.add_argument("--frontend", default="none", metavar="none|speex-denoise[:DB]|gtcrn:ONNX|gate:NPZ|wpe",
                    help="every rendering through this front end before embedding (speex.py), recorded in the file")
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
    ap.add_argument("--house", metavar="SPEAKERS.json",
                    help="also house-room and house-room-snrN (--room-snr): each clip in its speaker's own room "
                         "(cluster_speakers' output, one keyword's labels; house_rooms)")
    ap.add_argument("--only", nargs="+", default=None, metavar="COND", help="render only these conditions")
    ap.add_argument("--enrol-from", metavar="SPEAKERS.json",
                    help="a gate conditioned on the voice: each clip's enrolled on 3 other clips of its speaker")
    ap.add_argument("--test-side-extra", nargs="+", default=[], metavar="DIR",
                    help="household_eval's test side: these get_public_negatives eval folders (WORKDIR/public/eval/X)")
    ap.add_argument("--test-side-real-speech", action="store_true",
                    help="household_eval's test side: the real-speech evaluation speakers' streams")
    a = ap.parse_args(argv)
    from .evaluate_format2 import embed_all, eval_banks
    rooms = read_rirs(a.rirs) if a.rirs else []
    from hotphraselab import speex
    speex.parse_frontend(a.frontend)  # a wrong name fails before anything is rendered
    fe0 = speex.make(a.frontend)
    conditioned = bool(getattr(fe0, "conditioned", False))
    if conditioned != bool(a.enrol_from):
        raise HotPhraseError("--enrol-from", "is for a gate conditioned on a voice, and such a gate needs it")
    if conditioned and (a.test_side_extra or a.test_side_real_speech):
        raise HotPhraseError("--test-side-extra", "not through a gate conditioned on a voice (whose voice?)")
    if conditioned and a.warm_up:
        raise HotPhraseError("--warm-up", "not with a gate conditioned on a voice")
    speakers = None
    if a.enrol_from:
        with open(a.enrol_from) as f:
            speakers = json.load(f)["keywords"]
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
    conds = conditions(a.snr, rooms, a.room_snr, a.clean)
    house = None
    if a.house:
        if not rooms:
            raise HotPhraseError("--house", "needs --rirs")
        with open(a.house) as f:
            house = json.load(f)["keywords"]
        conds += ["house-room"] + [f"house-room-snr{s:g}" for s in a.room_snr]
    if a.only is not None:
        unknown = sorted(set(a.only) - set(conds))
        if unknown:
            raise HotPhraseError("--only", f"{', '.join(unknown)} not among this run's conditions ({', '.join(conds)})")
        conds = [c for c in conds if c in a.only]
    if a.oracle and any("snr" not in c and not (a.oracle_early and "room" in c) for c in conds):
        raise HotPhraseError("--oracle", "only for noisy conditions (give --only with snrN, room-snrN, "
                                         "house-room-snrN): the ideal gate of a clip without noise is no gate")
    if a.test_side_extra or a.test_side_real_speech:
        render_test_side(a.workdir, a.out, a.test_side_extra, a.test_side_real_speech, conds, rooms, a.procs,
                         a.frontend)
    if not a.words:
        return
    _, banks, _ = eval_banks(a.workdir)
    for word in a.words:
        clips = D.real_clips(word, None)
        enrol = None
        if speakers is not None:
            labels = speakers.get(word) or {}
            if len(labels) != len(clips):
                raise HotPhraseError(a.enrol_from, f"{len(labels)} clips of {word}, the folder has {len(clips)}")
            # a speaker of one clip (never enrolled by household_eval, only a guest there): enrolled on itself
            enrol = [talker_gate.enrollment_audio([clips[j] for j in (js or [i])])
                     for i, js in enumerate(talker_gate.enrollment_sets(sorted(labels), labels))]
        room_index = None
        for cond in conds:
            if cond.startswith("house"):
                if word not in (house or {}):
                    continue
                if len(house[word]) != len(clips):
                    raise HotPhraseError(a.house, f"{len(house[word])} clips of {word}, the folder has {len(clips)}")
                room_index = house_rooms([house[word][n] for n in sorted(house[word])])
            else:
                room_index = None
            path = os.path.join(a.out, cond, f"e1_eval_real_{word}.npz")
            if os.path.exists(path):
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
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
            labels = np.array(clip_labels(cond, len(clips), list(banks.kinds), rooms, room_index))
            e1data.save_ragged(path + ".tmp.npz", embed_all(audio, a.procs), drawn=json.dumps(used), labels=labels,
                               **fe)
            os.replace(path + ".tmp.npz", path)
            print(f"{path}: {len(audio)} clips ({used})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
