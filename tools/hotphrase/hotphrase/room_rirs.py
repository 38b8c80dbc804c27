"""The simulated rooms' impulse responses from a person to the speaker's microphone, for household_conditions
(issue #37, "Honest evaluation": a person across the room). They are the echo-cancellation benchmark's rooms,
made by its own code (tools/bench/aec_room.py: pyroomacoustics' image-source ShoeBox, absorption tuned until the
measured RT60 is within 5 % of the target, person paths high-passed at 50 Hz): four rooms (RT60 0.2-0.8 s), a
person 1, 2 and 3 m from the microphone.

  python -m hotphrase.room_rirs OUT.npz [--seed N]

Needs numpy, scipy and pyroomacoustics (tools/bench/aec_room_requirements.txt; a venv of its own, as
cluster_speakers: the training venv does not have them). Writes one float32 array per room and distance,
"ROOM_Dm" (e.g. "rt0.4_3m"), and "meta" (JSON: each one's room, distance, measured RT60 and direct-path delay in
samples, which household_conditions removes so the clip keeps its place in time).
"""
import json
import os
import sys

import numpy as np

from . import cli

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "bench")


@cli.command
def main(argv=None):
    ap = cli.parser(__name__, __doc__)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=37)
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.abspath(BENCH))
    import aec_room
    arrays, meta = {}, []
    for room in aec_room.ROOMS:
        R = aec_room.make_room(room, a.seed, lambda msg: print(msg, flush=True))
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
