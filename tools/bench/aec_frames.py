#!/usr/bin/env python3
"""speexdsp's echo canceller with 10 and 20 ms frames on the timer's trill and on speech (issue #19, BENCHMARKS.md,
"Echo cancellation": why the speaker keeps 10 ms frames).

  python tools/bench/aec_frames.py        (with numpy and pyroomacoustics: tools/bench/aec_room_requirements.txt)

Runs libspeexdsp.so.1 through ctypes with the speaker's settings (tail 200 ms, the preprocessor's residual echo
suppression at its defaults), in image-source rooms (RT60 0.3 and 0.6 s) with the microphone 7 cm, 0.5 m and 1.5 m
from the speaker, then in the first room at four echo levels 10 dB apart. Prints the echo reduction after the
first second: of the adaptive filter alone ("filter") and after the suppressor ("out"). A negative figure means
the canceller made the echo louder. speexdsp prints "acting funny and got slapped" when it resets a diverged filter.
"""
import ctypes, os, subprocess, sys, tempfile, wave
import numpy as np
import pyroomacoustics as pra

SR = 16000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
L = ctypes.CDLL("libspeexdsp.so.1")
L.speex_echo_state_init.restype = ctypes.c_void_p
L.speex_preprocess_state_init.restype = ctypes.c_void_p
ECHO_SET_SAMPLING_RATE, PP_SET_DENOISE, PP_SET_AGC, PP_SET_DEREVERB, PP_SET_ECHO_STATE = 24, 0, 2, 8, 24
I16 = ctypes.POINTER(ctypes.c_int16)


def cancel(mic, ref, frame):
    """The filter's output and the suppressor's, for int16 mic and ref on the same clock."""
    st = ctypes.c_void_p(L.speex_echo_state_init(frame, 200 * 16))
    rate = ctypes.c_int(SR)
    L.speex_echo_ctl(st, ECHO_SET_SAMPLING_RATE, ctypes.byref(rate))
    pp = ctypes.c_void_p(L.speex_preprocess_state_init(frame, SR))
    on, off = ctypes.c_int(1), ctypes.c_int(0)
    L.speex_preprocess_ctl(pp, PP_SET_DENOISE, ctypes.byref(on))
    L.speex_preprocess_ctl(pp, PP_SET_AGC, ctypes.byref(off))
    L.speex_preprocess_ctl(pp, PP_SET_DEREVERB, ctypes.byref(off))
    L.speex_preprocess_ctl(pp, PP_SET_ECHO_STATE, st)
    filtered, out, o = np.zeros_like(mic), np.zeros_like(mic), np.zeros(frame, np.int16)
    for k in range(0, len(mic) - frame + 1, frame):
        m, r = np.ascontiguousarray(mic[k:k + frame]), np.ascontiguousarray(ref[k:k + frame])
        L.speex_echo_cancellation(st, m.ctypes.data_as(I16), r.ctypes.data_as(I16), o.ctypes.data_as(I16))
        filtered[k:k + frame] = o
        L.speex_preprocess_run(pp, o.ctypes.data_as(I16))
        out[k:k + frame] = o
    L.speex_preprocess_state_destroy(pp)
    L.speex_echo_state_destroy(st)
    return filtered, out


def energy(x):
    return float(np.sum(x.astype(float) ** 2))


def reduction(mic, y):
    return 10 * np.log10(energy(mic[SR:]) / max(1.0, energy(y[SR:])))


def read16(path):
    with wave.open(path) as w:
        assert w.getframerate() == SR and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), np.int16)


def speech():
    text = ("It is seventy two degrees and sunny in Mountain View, with a light breeze from the west. Tonight, "
            "expect clear skies and a low of fifty four. Tomorrow will be warmer, with a high of eighty degrees.")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["espeak-ng", "-w", f"{tmp}/a.wav", text], check=True)
        subprocess.run(["sox", f"{tmp}/a.wav", "-r", str(SR), "-b", "16", f"{tmp}/b.wav"], check=True)
        return read16(f"{tmp}/b.wav")


def rir(rt60, dim, speaker, distance):
    absorption, order = pra.inverse_sabine(rt60, dim)
    room = pra.ShoeBox(dim, fs=SR, materials=pra.Material(absorption), max_order=min(order, 60), air_absorption=False)
    room.add_source(speaker)
    room.add_microphone([speaker[0] + distance, speaker[1], speaker[2]])
    room.compute_rir()
    h = np.asarray(room.rir[0][0])
    return h / np.max(np.abs(h)) * 0.5


def microphone(sound, h, gain):
    y = np.convolve(sound.astype(float) * 0.5 * gain, h)[:len(sound)] + np.random.default_rng(1).normal(0, 3, len(sound))
    return np.clip(y, -32768, 32767).astype(np.int16)


def main():
    trill = np.resize(read16(f"{ROOT}/share/earcons/timer.wav"), 20 * SR)
    talk = np.tile(speech(), 3)
    rooms = [(0.3, [4, 3.5, 2.6], [0.35, 1.4, 0.8]), (0.6, [6, 5, 2.8], [0.4, 2.6, 0.9])]
    print("| room | microphone | echo level | sound | 10 ms: filter / out | 20 ms: filter / out |")
    print("|---|---|---|---|---|---|")
    cases = [(rt, dim, spk, d, 1.0) for rt, dim, spk in rooms for d in (0.07, 0.5, 1.5)]
    cases += [(0.3, rooms[0][1], rooms[0][2], 0.07, g) for g in (0.3, 0.1, 0.03)]
    for rt, dim, spk, distance, gain in cases:
        h = rir(rt, dim, spk, distance)
        for name, sound in (("trill", trill), ("speech", talk)):
            mic = microphone(sound, h, gain)
            cells = []
            for frame in (160, 320):
                filtered, out = cancel(mic, sound, frame)
                cells.append("%.1f / %.1f dB" % (reduction(mic, filtered), reduction(mic, out)))
            print(f"| RT60 {rt} s | {distance} m | {20 * np.log10(gain):.0f} dB | {name} | {cells[0]} | {cells[1]} |",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
