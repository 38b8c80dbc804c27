"""The real keyword clips in noise and in simulated rooms, for household_eval's --condition (the enrolled people's
other clips in noise at 0, 5 and 10 dB and in simulated rooms, enrollment clean), and its test side in them.

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
              (with --rirs and --house SPEAKERS.json) as room and room-snrN, but each
              clip through its speaker's own room (a household lives in one): house_rooms
  clean       (with --clean) the clip as evaluate_format2's clean set renders it (held-out fan noise before it at
              its own floor) but drawn from this module's seed: the clean set on a machine without evaluate_format2's
              caches, and through a --frontend
Everything is drawn from seeds fixed per keyword and condition, so a rerun writes the same audio.

With `--frontend FE` (one of the lab's front ends, run as `python -m hotphraselab.household_conditions`, which
also renders through an ideal gate, warms a front end up and enrols a gate on the speaker's voice;
frontend_registry.py) every rendering (a clip with its lead-in, or a whole test-side stream) goes through the front
end from its start before it is embedded, as a front end ahead of the speaker's embedding would run; each file
records its front end (`frontend`), and household_eval uses a file only with the same --frontend. Give each front
end its own OUT.

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
from . import frontend_registry as FR
from . import heldout
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


def condition_audio(word, cond, clips, banks, rooms, room_index=None, each=None):
    """Each clip rendered in condition `cond` (see the module's doc), in order, and a summary of what was drawn;
    `room_index` (house_rooms) picks each clip's room instead of the rooms in turn. `each(rendering, parts)`, when
    given, returns what is kept in each rendering's place, from what it was made of: parts["clip"] the dry clip,
    ["room"] (its room's meta, impulse response) or None, ["heard"] the clip as the room gave it (the dry clip
    without one), ["tail"] the silence after it, ["noise"] (the noise family's bank, where the rendering's stretch
    of it starts, that stretch, the SNR) or None (the lab's ideal gate and warm-up read them). It draws no random
    numbers: the renderings are drawn exactly as without it."""
    rng = np.random.default_rng(zlib.crc32(f"{word}/{cond}".encode()))
    fan = banks.b["fan"]
    kinds = list(banks.kinds)
    audio, used = [], {}
    for i, dry in enumerate(clips):
        snr = float(cond.rsplit("snr", 1)[1]) if "snr" in cond else None
        x, room = dry, None
        if "room" in cond:
            room = room_of(i, rooms, room_index)
            m, h = room
            x = reverberant(dry, h, m["direct_path_samples"])
            tail = 0
            used[m["key"]] = used.get(m["key"], 0) + 1
        else:
            tail = TAIL
        if snr is None:
            y, noise_parts = render(x, tail, lead=floor_lead(rng, fan, x)), None
        else:
            kind = kinds[i % len(kinds)]
            used[kind] = used.get(kind, 0) + 1
            noise, start = A.crop_from(rng, banks.b[kind], LEAD + len(x) + tail)
            y, noise_parts = render(x, tail, noise=noise, snr=snr), (banks.b[kind], start, noise, snr)
        if each is not None:
            y = each(y, {"clip": dry, "room": room, "heard": x, "tail": tail, "noise": noise_parts})
        audio.append(y)
    return audio, used


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


def stamped(audio, frontend):
    """The renderings through the front end (frontend_registry.make's; none: as they are) and the file's
    `frontend` entry."""
    fe = FR.make(frontend)
    if fe is not None:
        audio = [FR.apply_float(fe, x) for x in audio]
    return audio, {"frontend": np.array(FR.parse_frontend(frontend) or "none")}


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


def parser(name=__name__, doc=__doc__):
    """The command's options (the lab's household_conditions adds its own)."""
    ap = cli.parser(name, doc)
    ap.add_argument("workdir")
    ap.add_argument("out")
    ap.add_argument("--words", nargs="*", default=["computer", "jarvis", "snowboy", "view-glass"])
    ap.add_argument("--snr", nargs="*", type=float, default=[0, 5, 10])
    ap.add_argument("--rirs", help="room_rirs' output; without it, no room conditions")
    ap.add_argument("--room-snr", nargs="*", type=float, default=[10])
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--clean", action="store_true",
                    help="also the clean condition (as evaluate_format2's clean set, from this module's seed)")
    ap.add_argument("--frontend", default="none", metavar=FR.metavar(),
                    help="every rendering through this front end before embedding (frontend_registry.py), "
                         "recorded in the file")
    ap.add_argument("--house", metavar="SPEAKERS.json",
                    help="also house-room and house-room-snrN (--room-snr): each clip in its speaker's own room "
                         "(cluster_speakers' output, one keyword's labels; house_rooms)")
    ap.add_argument("--only", nargs="+", default=None, metavar="COND", help="render only these conditions")
    ap.add_argument("--test-side-extra", nargs="+", default=[], metavar="DIR",
                    help="household_eval's test side: these get_public_negatives eval folders (WORKDIR/public/eval/X)")
    ap.add_argument("--test-side-real-speech", action="store_true",
                    help="household_eval's test side: the real-speech evaluation speakers' streams")
    return ap


@cli.command
def main(argv=None):
    run(parser().parse_args(argv))


def chosen_conditions(a, rooms):
    """(the conditions this run renders, in order; --house's speakers or None)."""
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
    return conds, house


def house_index(word, n_clips, house, path):
    """house_rooms' room of each of a keyword's n_clips clips (None: the keyword has no speakers in --house)."""
    if word not in (house or {}):
        return None
    if len(house[word]) != n_clips:
        raise HotPhraseError(path, f"{len(house[word])} clips of {word}, the folder has {n_clips}")
    return house_rooms([house[word][n] for n in sorted(house[word])])


def plain_renderings(a, word, clips, banks, rooms):
    """The renderings of one keyword's clips in a condition, through --frontend: render(cond, room_index) ->
    (audio, what was drawn, the file's front-end entries). The lab's household_conditions passes its own."""
    def render(cond, room_index):
        audio, used = condition_audio(word, cond, clips, banks, rooms, room_index)
        audio, fe = stamped(audio, a.frontend)
        return audio, used, fe
    return render


def run(a, lab=None):
    """The command on parsed arguments (parser's). `lab` (hotphraselab.household_conditions) checks its own options
    (check_options(rooms), check_conditions(conds)) and renders each keyword its own way (renderings(a, word,
    clips, banks, rooms), as plain_renderings)."""
    from .evaluate_format2 import embed_all, eval_banks
    rooms = read_rirs(a.rirs) if a.rirs else []
    FR.parse_frontend(a.frontend)  # a wrong name fails before anything is rendered
    if lab is not None:
        lab.check_options(rooms)
    conds, house = chosen_conditions(a, rooms)
    if lab is not None:
        lab.check_conditions(conds)
    if a.test_side_extra or a.test_side_real_speech:
        render_test_side(a.workdir, a.out, a.test_side_extra, a.test_side_real_speech, conds, rooms, a.procs,
                         a.frontend)
    if not a.words:
        return
    _, banks, _ = eval_banks(a.workdir)
    for word in a.words:
        clips = D.real_clips(word, None)
        render = (lab.renderings if lab is not None else plain_renderings)(a, word, clips, banks, rooms)
        for cond in conds:
            room_index = None
            if cond.startswith("house"):
                room_index = house_index(word, len(clips), house, a.house)
                if room_index is None:
                    continue
            path = os.path.join(a.out, cond, f"e1_eval_real_{word}.npz")
            if os.path.exists(path):
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            audio, used, fe = render(cond, room_index)
            labels = np.array(clip_labels(cond, len(clips), list(banks.kinds), rooms, room_index))
            e1data.save_ragged(path + ".tmp.npz", embed_all(audio, a.procs), drawn=json.dumps(used), labels=labels,
                               **fe)
            os.replace(path + ".tmp.npz", path)
            print(f"{path}: {len(audio)} clips ({used})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
