"""The near end: "OK Hound" by the hot-phrase training's held-out voices (tools/hotphrase/hotphrase/synth.py),
real "view glass" recordings, their placement over the echo at a condition's ESR, and their labels."""

import glob
import os
import random

import numpy as np

from . import common as C
from .common import (FIRST_PHRASE_S, Fail, MAX_NUDGE_S, MIN_ECHO_IN_SPAN_DB, SPACING_S, SR, active_rms, active_span, db,
                     read_wav, rms, rng_for, sox_to_16k)


def _fade(x, ms=10):
    n = min(len(x) // 2, SR * ms // 1000)
    if n:
        w = np.linspace(0, 1, n)
        x = x.copy()
        x[:n] *= w
        x[-n:] *= w[::-1]
    return x


def heldout_phrases(seed, tag, n, log):
    """n clips of "OK Hound" (the training's own spellings) by the voices the hot-phrase training never used
    (tools/hotphrase/hotphrase/synth.py voices("eval"): espeak-ng's West Midlands accent and a held-out fifth of
    the variants, flite rms, festival ked_diphone), each with random speed and pitch (synth.job). Returns
    [(float clip, meta)]."""
    from hotphrase import phrases, synth
    voices = synth.voices("eval")
    texts = phrases.PHRASES["ok-hound"]["texts"]
    r = random.Random(f"aec-room|{seed}|{tag}")
    out = []
    for _ in range(10):
        jobs = [synth.job(r, synth.pick_voice(r, voices), r.choice(texts)) for _ in range(n - len(out))]
        for j, c in zip(jobs, synth.synth_batch(jobs)):
            c = synth.trim(np.asarray(c, np.float64))
            if 0.3 * SR <= len(c) <= 3.0 * SR:
                out.append((_fade(np.concatenate([np.zeros(SR // 20), c, np.zeros(SR // 20)]), 5),
                            {"engine": j[0], "voice": j[1], "text": j[2], "rate": round(j[3], 3),
                             "pitch": round(j[4], 3), "source": f"{j[0]} (held-out voice)"}))
        if len(out) >= n:
            return out[:n]
    raise Fail(f"could not synthesize {n} held-out phrases (got {len(out)}): is a synthesizer broken?")


def real_files():
    files = sorted(glob.glob(os.path.join(C.REAL_DIR, "*.flac")) + glob.glob(os.path.join(C.REAL_DIR, "*.wav")))
    if not files:
        raise Fail(f"no recordings in {C.REAL_DIR}")
    return files


def real_phrases(seed, room_index, n, tmp):
    """n real clips (C.REAL_DIR: "view glass" unless --real-dir) for a room (each room its own clips; the same ones at every ESR), cut to their
    active span with 0.25 s either side."""
    files = real_files()
    order = rng_for(seed, "realvg-order").permutation(len(files))
    pick = [files[order[(room_index * n + i) % len(files)]] for i in range(n)]
    out = []
    for path in pick:
        wav = os.path.join(tmp, "real.wav")
        sox_to_16k(path, wav)
        x, _ = read_wav(wav)
        a, b = active_span(x)
        a, b = max(0, a - SR // 4), min(len(x), b + SR // 4)
        out.append((_fade(x[a:b]), {"engine": "real", "voice": "real:" + os.path.splitext(os.path.basename(path))[0],
                                    "text": C.REAL_TEXT, "source": path, "cut_s": [round(a / SR, 3), round(b / SR, 3)]}))
    return out


def place_phrases(r, clips, R, echoes, n_max):
    """Onsets about every 6-8 s, never overlapping (clip, reverberation and 1 s apart); each phrase said from one
    of the room's person positions. echoes: the far-end echoes the phrases must fall over. Returns placements."""
    from scipy.signal import fftconvolve
    usual = [10 ** (db(active_rms(e)) / 20) for e in echoes]
    t = int(r.uniform(*FIRST_PHRASE_S) * SR)
    out = []
    for x, meta in clips:
        p = int(r.integers(len(R["persons"])))
        near = fftconvolve(x, R["h_person"][p])
        D = R["offset"] + int(round(R["persons"][p]["direct_path_samples"]))
        a, b = active_span(x)
        a, b = a + D, b + D
        nudged = 0
        while not all(rms(e[t + a: t + b]) >= u * 10 ** (MIN_ECHO_IN_SPAN_DB / 20) for e, u in zip(echoes, usual)):
            # A phrase in a pause would be scaled to the pause's echo for its ESR: to nothing, a voice no one hears.
            if nudged >= MAX_NUDGE_S * SR:
                raise Fail(f"no place within {MAX_NUDGE_S:g} s of {t / SR - nudged / SR:.2f} s where every playback "
                           f"is within {-MIN_ECHO_IN_SPAN_DB:g} dB of its usual level over the phrase (internal)")
            t += SR // 4
            nudged += SR // 4
        if t + len(near) > n_max:
            raise Fail("the far-end stream is too short for the phrases (internal)")
        out.append({"t": t, "near": near, "span": (a, b), "person": p, "D": D, "len": len(x), "meta": meta,
                    "nudged_s": nudged / SR})
        t = max(t + int(r.uniform(*SPACING_S) * SR), t + len(near) + SR)
    end = out[-1]["t"] + len(out[-1]["near"]) + 2 * SR if out else n_max
    return out, min(end, n_max)


def mix_near(placements, echo, esr, n):
    """The near end at the microphone with each phrase's gain set for the ESR over its span."""
    near = np.zeros(n)
    gains = []
    for p in placements:
        a, b = p["span"]
        e = rms(echo[p["t"] + a: p["t"] + b]) if echo is not None else None
        g = e / rms(p["near"][a:b]) / 10 ** (esr / 20)
        gains.append(g)
        near[p["t"]: p["t"] + len(p["near"])] += g * p["near"]
    return near, gains


def phrase_labels(placements, gains, echo, near, R):
    out = []
    for p, g in zip(placements, gains):
        a, b = p["t"] + p["span"][0], p["t"] + p["span"][1]
        ne, ee = rms(near[a:b]), (rms(echo[a:b]) if echo is not None else 0.0)
        person = R["persons"][p["person"]]
        out.append({"start": round(a / SR, 4), "end": round(b / SR, 4),
                    "clip_start": round((p["t"] + p["D"]) / SR, 4), "clip_end": round((p["t"] + p["D"] + p["len"]) / SR, 4),
                    "start_sample": int(a), "end_sample": int(b),
                    **p["meta"], "person_distance_m": person["distance_m"], "person_position_m": person["position"],
                    "gain_db": round(db(g), 2), "level_dbfs": round(db(ne), 2),
                    "echo_dbfs": round(db(ee), 2) if echo is not None else None,
                    "esr_measured_db": round(db(ee) - db(ne), 3) + 0.0 if echo is not None else None,
                    "moved_later_s": p["nudged_s"]})
    return out
