"""Writing the set: each condition's folder, the streamed own-speech files, and the whole set (OUT/index.json,
OUT/NOTICE.txt)."""

import glob
import json
import os
import shutil
import tempfile
import time

import numpy as np

from . import common as C
from .answers import Answers, answer_text, ring_signal, speech_stream, timer_ring
from .common import (ANSWER_DBFS, BULK_DELAY_SAMPLES, ECHO_DBFS, ECHO_ONLY_SECONDS, ESRS_DB, FIRST_PHRASE_S, Fail,
                     NOISE_BELOW_ECHO_DB, NOISE_DBFS, OWN_FILE_SECONDS, QUICK, SPACING_S, SR,
                     WavWriter, active_rms, db, rng_for, write_float_wav, write_wav)
from .nearend import heldout_phrases, mix_near, phrase_labels, place_phrases, real_files, real_phrases
from .rooms import PinkNoise, ROOMS, StreamEcho, echo_of, make_room, room_json


GENERATOR = "tools/bench/aec_room"


def base_labels(condition, R, seed, n, esr=None):
    s = R["spec"]
    return {"condition": condition, "room": s["name"], "room_description": s["description"],
            "rt60_s": s["rt60"], "rt60_measured_s": round(R["rt60_measured"], 3), "esr_db": esr,
            "esr_definition": "20 log10(RMS(echo) / RMS(near end)) at the microphone over each phrase's "
                              "[start, end] (its active span)",
            "bulk_delay_samples": BULK_DELAY_SAMPLES, "bulk_delay_ms": BULK_DELAY_SAMPLES * 1000 / SR,
            "echo_path": {"speaker_mic_distance_m": round(R["speaker_mic_m"], 3),
                          "direct_path_samples": round(R["echo_direct_samples"], 3),
                          "expected_peak_lag_samples": BULK_DELAY_SAMPLES + int(round(R["echo_direct_samples"])),
                          "echo_gain": round(R["echo_gain"], 6),
                          "rir": f"rooms/{s['name']}/rir-speaker.wav",
                          "rir_model_offset_samples": R["offset"],
                          "definition": "echo[n] = sum_k rir[k] ref[n - (bulk_delay_samples - "
                                        "rir_model_offset_samples) - k]; rir includes echo_gain"},
            "noise": {"kind": "pink", "rms_dbfs": NOISE_DBFS, "below_echo_speech_level_db": NOISE_BELOW_ECHO_DB},
            "levels": {"answers_as_played_dbfs": ANSWER_DBFS, "echo_speech_level_dbfs": ECHO_DBFS},
            "sample_rate": SR, "samples": int(n), "duration_s": round(n / SR, 4), "seed": seed,
            "generator": GENERATOR}


def write_condition(d, labels, ref, echo, near, noise, components):
    os.makedirs(d, exist_ok=True)
    mic = noise.copy()
    if echo is not None:
        mic += echo
    if near is not None:
        mic += near
    labels["clipped_samples"] = write_wav(os.path.join(d, "mic.wav"), mic)
    write_wav(os.path.join(d, "ref.wav"), ref)
    if components and echo is not None:
        write_wav(os.path.join(d, "echo.wav"), echo)
    if components and near is not None:
        write_wav(os.path.join(d, "near.wav"), near)
    with open(os.path.join(d, "labels.json"), "w") as f:
        json.dump(labels, f, indent=1)


def cut_segments(segs, n):
    return [dict(s, end=min(s["end"], round(n / SR, 4))) for s in segs if s["start"] < n / SR]


def noise_for(seed, *what):
    return lambda n: PinkNoise(rng_for(seed, "noise", *what)).next(n)


def far_end_labels(kind, segs=None, ring_rate=None):
    if kind == "speech":
        return {"kind": "speech", "voice": "espeak-ng -v en-us, resampled to 16 kHz by sox",
                "level_dbfs": ANSWER_DBFS, "segments": segs}
    if kind == "ring":
        return {"kind": "ring", "source": C.TIMER_WAV, "source_rate": ring_rate,
                "repeat": "back to back: the file's own 0.6 s pause is the gap (as the speaker replays it)",
                "segments": segs}
    return {"kind": "none", "segments": []}


# --- own speech (streamed) ------------------------------------------------------------------------------------------
def own_speech_file(idx, R, seconds, seed, answers, ring, ring_rate, d):
    os.makedirs(d, exist_ok=True)
    r = rng_for(seed, "own", idx)
    noise = PinkNoise(rng_for(seed, "noise", "own", idx))
    se = StreamEcho(R)
    mic_w, ref_w = WavWriter(os.path.join(d, "mic.wav")), WavWriter(os.path.join(d, "ref.wav"))
    n_total = int(seconds * SR)
    t = ring_t = 0
    segs = []
    while t < n_total:
        # (a share of 1: nothing but the ring, for its self-stops alone)
        if C.OWN_RING_FRACTION >= 1 or (ring_t < C.OWN_RING_FRACTION * t and r.random() < 0.3):
            x = ring_signal(ring, int(r.uniform(10, 40) * SR))
            seg = {"kind": "ring"}
        else:
            topic, text = answer_text(r)
            x = answers.say(text)
            seg = {"kind": "answer", "topic": topic, "text": text}
        m = min(len(x), n_total - t)
        seg.update(start=round(t / SR, 4), end=round((t + m) / SR, 4))
        segs.append(seg)
        if seg["kind"] == "ring":
            ring_t += m
        x = np.concatenate([x, np.zeros(int(r.uniform(0.5, 3.0) * SR))])[: n_total - t]
        e = se.process(x)
        mic_w.write(e + noise.next(len(x)))
        ref_w.write(x)
        t += len(x)
    mic_w.close()
    ref_w.close()
    labels = base_labels("own-speech", R, seed, n_total)
    labels.update(clipped_samples=mic_w.clipped,
                  ring_fraction=round(ring_t / n_total, 4), phrases=[], file_index=idx,
                  sources=["espeak-ng -v en-us (texts in segments)", C.TIMER_WAV])
    labels["far_end"] = {"kind": "speech and ring", "voice": "espeak-ng -v en-us, resampled to 16 kHz by sox",
                         "ring_source": C.TIMER_WAV, "ring_source_rate": ring_rate, "segments": segs}
    with open(os.path.join(d, "labels.json"), "w") as f:
        json.dump(labels, f, indent=1)
    return ring_t / n_total


# --- the whole set --------------------------------------------------------------------------------------------------
TOP = ["rooms", "echo-only", "echo-only-ring", "talk", "ring", "realvg", "realvg-ring", "silence", "silence-ring",
       "silence-realvg", "silence-realvg-ring", "own-speech"]


def prepare_out(out):
    if os.path.isdir(out) and os.listdir(out):
        if not os.path.exists(os.path.join(out, "index.json")):
            raise Fail(f"{out} is not empty and holds no index.json of this tool: not overwriting it")
        for t in TOP + ["index.json", "NOTICE.txt"]:
            p = os.path.join(out, t)
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
    os.makedirs(out, exist_ok=True)


NOTICE = """Sources of this generated set (tools/bench/aec_room):
- The speaker's answers and the "OK Hound" phrases: synthesized with espeak-ng (GPL-3.0; its output is not covered
  by it), flite and festival (BSD-style licences) voices.
- share/earcons/timer.wav: the project's own earcon (tools/make-earcons.sh).
- realvg*/ (by default; --real-dir may name others, e.g. Speech Commands' "stop" clips, CC BY 4.0, Warden 2018):
  clips of "view glass" from the Picovoice wake-word-benchmark repository, Copyright 2018 Picovoice Inc.,
  licensed under the Apache License, Version 2.0 (../shared/data/real-keywords/LICENSE beside the repository).
  Modified here: cut to the spoken part, convolved with simulated room impulse responses, rescaled and mixed with
  other audio.
  Not "OK Hound"; do not train on them as positives (their README).
- Room impulse responses: pyroomacoustics (MIT) image-source model.
Nothing here is to be committed to the project.
"""


def generate(args, log):
    t_start = time.time()
    seed = args.seed
    out = os.path.abspath(args.out)
    quick = args.quick
    rooms = [r for r in ROOMS if not quick or r["name"] in QUICK["rooms"]]
    esrs = QUICK["esrs"] if quick else ESRS_DB
    n_ph = QUICK["phrases"] if quick else args.phrases
    n_real = QUICK["real_clips"] if quick else args.real_clips
    echo_only_n = (QUICK["echo_only_s"] if quick else ECHO_ONLY_SECONDS) * SR
    own_file_s = QUICK["own_file_s"] if quick else OWN_FILE_SECONDS
    own_files = 1 if quick else max(1, int(np.ceil(args.own_hours * 3600 / OWN_FILE_SECONDS - 1e-9)))
    if n_real * len(rooms) > len(real_files()):
        log(f"note: {n_real} real clips x {len(rooms)} rooms is more than the {len(real_files())} recordings: some repeat")
    prepare_out(out)
    index = {"generator": GENERATOR, "arguments": {"seed": seed, "phrases": n_ph, "real_clips": n_real,
                                                   "own_hours": args.own_hours, "quick": quick,
                                                   "own_ring_share": C.OWN_RING_FRACTION,
                                                   "answer_texts": C.ANSWER_TEXTS,
                                                   "fallback_rirs": args.fallback_rirs},
             "complete": False, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "stages_s": {}}

    def save_index():
        with open(os.path.join(out, "index.json"), "w") as f:
            json.dump(index, f, indent=1)
    save_index()
    with open(os.path.join(out, "NOTICE.txt"), "w") as f:
        f.write(NOTICE)

    stage_t = [time.time()]

    def stage(name):
        now = time.time()
        index["stages_s"][name] = round(now - stage_t[0], 1)
        stage_t[0] = now
        log(f"{name} done in {index['stages_s'][name]:.1f} s")
        save_index()

    tmp = tempfile.mkdtemp(prefix="aec-room-")
    try:
        log("rooms")
        Rs = []
        for room in rooms:
            R = make_room(room, seed, log, args.fallback_rirs)
            d = os.path.join(out, "rooms", room["name"])
            os.makedirs(d, exist_ok=True)
            write_float_wav(os.path.join(d, "rir-speaker.wav"), R["h_echo"])
            for p, h in zip(R["persons"], R["h_person"]):
                write_float_wav(os.path.join(d, f"rir-person-{p['distance_m']:g}m.wav"), h)
            with open(os.path.join(d, "room.json"), "w") as f:
                json.dump(room_json(R), f, indent=1)
            Rs.append(R)
        index["rooms"] = [room_json(R) for R in Rs]
        stage("rooms")

        answers = Answers(tmp)
        ring, ring_rate = timer_ring()

        # 1. echo only
        log("echo-only")
        ref_s, segs_s = speech_stream(rng_for(seed, "echo-only-speech"), answers, echo_only_n)
        ref_r = ring_signal(ring, echo_only_n)
        for R in Rs:
            name = R["spec"]["name"]
            for cond, ref, kind, segs in (("echo-only", ref_s, "speech", segs_s),
                                          ("echo-only-ring", ref_r, "ring",
                                           [{"start": 0.0, "end": echo_only_n / SR, "kind": "ring"}])):
                echo = echo_of(R, ref)
                lab = base_labels(cond, R, seed, echo_only_n)
                lab.update(far_end=far_end_labels(kind, segs, ring_rate), phrases=[],
                           echo_dbfs_active=round(db(active_rms(echo)), 2),
                           sources=[C.TIMER_WAV] if kind == "ring" else ["espeak-ng -v en-us (texts in far_end.segments)"])
                write_condition(os.path.join(out, cond, name), lab, ref, echo, None,
                                noise_for(seed, cond, name)(echo_only_n), True)
        stage("echo-only")

        # 2-4. talk, ring, silence; realvg and its silence
        log("far-end speech for talk and realvg")
        n_far = int((FIRST_PHRASE_S[1] + max(n_ph, n_real) * (SPACING_S[1] + 2.5) + 10) * SR)
        far, far_segs = speech_stream(rng_for(seed, "talk-speech"), answers, n_far)
        far_ring = ring_signal(ring, n_far)
        stage("far-end speech")
        for ri, R in enumerate(Rs):
            name = R["spec"]["name"]
            log(f"talk, ring, silence: {name}")
            echo_t, echo_r = echo_of(R, far), echo_of(R, far_ring)
            clips = heldout_phrases(seed, f"talk-{name}", n_ph, log)
            pl, n = place_phrases(rng_for(seed, "place", name), clips, R, [echo_t, echo_r], n_far)
            for esr in esrs:
                noise = noise_for(seed, "talk", name, esr)(n)
                for cond, ref, echo, kind, segs in (
                        ("talk", far[:n], echo_t[:n], "speech", cut_segments(far_segs, n)),
                        ("ring", far_ring[:n], echo_r[:n], "ring", [{"start": 0.0, "end": n / SR, "kind": "ring"}])):
                    near, gains = mix_near(pl, echo, esr, n)
                    lab = base_labels(cond, R, seed, n, esr)
                    lab.update(far_end=far_end_labels(kind, segs, ring_rate),
                               phrases=phrase_labels(pl, gains, echo, near, R),
                               sources=([C.TIMER_WAV] if kind == "ring" else ["espeak-ng -v en-us (texts in far_end.segments)"])
                               + ["held-out synthetic voices (phrases[].voice): espeak-ng, flite, festival"])
                    write_condition(os.path.join(out, cond, name, str(esr)), lab, ref, echo, near, noise, True)
                    sil = "silence" if cond == "talk" else "silence-ring"
                    lab = dict(lab, condition=sil, far_end=far_end_labels("none"), mirror_of=f"{cond}/{name}/{esr}",
                               phrases=phrase_labels(pl, gains, None, near, R))
                    write_condition(os.path.join(out, sil, name, str(esr)), lab, np.zeros(n), None, near, noise, True)
            stage(f"talk+ring+silence {name}")

            log(f"realvg: {name}")
            clips = real_phrases(seed, ri, n_real, tmp)
            # over the answers and over the ring: realvg-ring puts the same clips at the same times
            pl, n = place_phrases(rng_for(seed, "place-real", name), clips, R, [echo_t, echo_r], n_far)
            for esr in esrs:
                noise = noise_for(seed, "realvg", name, esr)(n)
                near, gains = mix_near(pl, echo_t[:n], esr, n)
                lab = base_labels("realvg", R, seed, n, esr)
                lab.update(far_end=far_end_labels("speech", cut_segments(far_segs, n)),
                           phrases=phrase_labels(pl, gains, echo_t[:n], near, R),
                           sources=["espeak-ng -v en-us (texts in far_end.segments)",
                                    f"real '{C.REAL_TEXT}' recordings (phrases[].source; see NOTICE.txt)"])
                write_condition(os.path.join(out, "realvg", name, str(esr)), lab, far[:n], echo_t[:n], near, noise, True)
                lab = dict(lab, condition="silence-realvg", far_end=far_end_labels("none"),
                           mirror_of=f"realvg/{name}/{esr}", phrases=phrase_labels(pl, gains, None, near, R))
                write_condition(os.path.join(out, "silence-realvg", name, str(esr)), lab, np.zeros(n), None, near,
                                noise, True)
                # the same clips at the same times over the ring (issue #61: a stop word is said over either)
                near_r, gains_r = mix_near(pl, echo_r[:n], esr, n)
                lab = base_labels("realvg-ring", R, seed, n, esr)
                lab.update(far_end=far_end_labels("ring", [{"start": 0.0, "end": n / SR, "kind": "ring"}], ring_rate),
                           phrases=phrase_labels(pl, gains_r, echo_r[:n], near_r, R),
                           sources=[C.TIMER_WAV, f"real '{C.REAL_TEXT}' recordings (phrases[].source; see NOTICE.txt)"])
                write_condition(os.path.join(out, "realvg-ring", name, str(esr)), lab, far_ring[:n], echo_r[:n], near_r,
                                noise, True)
                lab = dict(lab, condition="silence-realvg-ring", far_end=far_end_labels("none"),
                           mirror_of=f"realvg-ring/{name}/{esr}", phrases=phrase_labels(pl, gains_r, None, near_r, R))
                write_condition(os.path.join(out, "silence-realvg-ring", name, str(esr)), lab, np.zeros(n), None,
                                near_r, noise, True)
            stage(f"realvg {name}")

        # 5. own speech, streamed file by file
        log(f"own-speech: {own_files} file(s) of {own_file_s} s")
        fr = []
        for i in range(own_files):
            R = Rs[i % len(Rs)]
            fr.append(own_speech_file(i, R, own_file_s, seed, answers, ring, ring_rate,
                                      os.path.join(out, "own-speech", f"{i:03d}")))
            log(f"  own-speech/{i:03d} ({R['spec']['name']}): ringing {100 * fr[-1]:.1f} %")
        index["own_speech"] = {"files": own_files, "file_seconds": own_file_s,
                               "hours": round(own_files * own_file_s / 3600, 3),
                               "ring_fraction": round(float(np.mean(fr)), 4)}
        stage("own-speech")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    index["conditions"] = sorted(os.path.relpath(os.path.dirname(p), out)
                                 for p in glob.glob(os.path.join(out, "**", "labels.json"), recursive=True))
    index["complete"] = True
    index["total_s"] = round(time.time() - t_start, 1)
    save_index()
    log(f"generated {len(index['conditions'])} conditions in {index['total_s']:.0f} s")
