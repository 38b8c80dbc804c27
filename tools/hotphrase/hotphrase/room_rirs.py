"""The simulated rooms' impulse responses from a person to the speaker's microphone, for household_conditions (a
person across the room). They are the echo-cancellation benchmark's rooms, made by its own
code (tools/bench/aec_room, the package aec_room: pyroomacoustics' image-source ShoeBox, absorption tuned until the
measured RT60 is within 5 % of the target, person paths high-passed at 50 Hz): four rooms (RT60 0.2-0.8 s), a person
1, 2 and 3 m from the microphone.

  python -m hotphrase.room_rirs OUT.npz [--seed N]

Needs numpy, scipy and pyroomacoustics (tools/bench/aec_room_requirements.txt) and the aec_room package: the room
set's venv, where both packages are installed (tools/bench/README.md; the training venv does not have them), e.g.
`.venv-aecroom/bin/python -m hotphrase.room_rirs OUT.npz`. Writes one float32 array per room and distance,
"ROOM_Dm" (e.g. "rt0.4_3m"), and "meta" (JSON: each one's room, distance, measured RT60 and direct-path delay in
samples, which household_conditions removes so the clip keeps its place in time).
"""
import json
import sys

import numpy as np

from . import cli
from .errors import HotPhraseError


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=37)
    a = ap.parse_args(argv)
    try:
        from aec_room import rooms
        from aec_room.common import Fail
    except ImportError as e:
        raise HotPhraseError("aec_room", f"cannot import the room set's package ({e}): run this in the venv of "
                             "tools/bench/README.md (pip install --no-deps -e tools/hotphrase -e tools/bench)") from e
    arrays, meta = {}, []
    for room in rooms.ROOMS:
        try:
            R = rooms.make_room(room, a.seed, lambda msg: print(msg, flush=True))
        except Fail as e:  # a missing pyroomacoustics, a room without a place for a person
            raise HotPhraseError("aec_room", str(e)) from e
        for p, h in zip(R["persons"], R["h_person"]):
            key = f"{room['name']}_{p['distance_m']:g}m"
            arrays[key] = np.asarray(h, np.float32)
            meta.append({"key": key, "room": room["name"], "description": room["description"],
                         "distance_m": p["distance_m"], "rt60_measured_s": round(R["rt60_measured"], 3),
                         "direct_path_samples": int(round(R["offset"] + p["direct_path_samples"])),
                         "method": R["method"]["method"]})
    np.savez(a.out, meta=json.dumps(meta), **arrays)
    for m in meta:
        print(f"{m['key']}: RT60 {m['rt60_measured_s']} s, direct path at sample {m['direct_path_samples']}")


if __name__ == "__main__":
    sys.exit(main())
