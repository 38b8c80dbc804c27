#!/usr/bin/env bash
# Makes the built-in earcons (share/earcons/*.wav) with sox: short, soft sounds at 16 kHz mono, each with 5 ms
# fades so they do not click. Rerun to change them; the WAVs are committed so the speaker needs no sox.
#   start_listening  a rising two-note chime (the speaker is listening)
#   stop_listening   the same two notes falling (it has stopped listening)
#   cancel           one short low note
#   error            two low buzzing pulses
#   timer            a timer going off: four trilled beeps and a pause (played again and again until stopped).
#                    Each beep is a 1.5 kHz tone warbled +-700 Hz at 25 Hz, like an alarm clock's trill. A steady
#                    beep was cancelled only 14-22 dB by the echo canceller (one frequency says nothing about the
#                    rest of the echo path); the trill sweeps 0.8-2.2 kHz 25 times a second and is cancelled
#                    28-32 dB (BENCHMARKS.md, "Echo cancellation"). sox cannot frequency-modulate this deeply, so
#                    python3's standard library writes it.
#   mute_on          the microphone switched off: a low note sliding down
#   mute_off         the microphone on again: the same note sliding up
#   announce         an announcement follows (control API "say"): three descending notes, like a doorbell
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/share/earcons"
mkdir -p "$out"
fmt=(-r 16000 -c 1 -b 16)
tone() { sox -n "${fmt[@]}" "$1" synth "$2" sine "$3" fade q 0.005 "$2" 0.03 vol "$4"; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
tone "$tmp/a.wav" 0.09 880 0.35; tone "$tmp/b.wav" 0.12 1320 0.35
sox "$tmp/a.wav" "$tmp/b.wav" "$out/start_listening.wav"
sox "$tmp/b.wav" "$tmp/a.wav" "$out/stop_listening.wav"
tone "$out/cancel.wav" 0.12 440 0.3
sox -n "${fmt[@]}" "$tmp/buzz.wav" synth 0.12 square 220 fade q 0.005 0.12 0.02 vol 0.15
sox -n "${fmt[@]}" "$tmp/gap.wav" trim 0 0.06
sox "$tmp/buzz.wav" "$tmp/gap.wav" "$tmp/buzz.wav" "$out/error.wav"
python3 - "$out/timer.wav" <<'PY'
import math, struct, sys, wave
rate = 16000
def beep(seconds=0.15, centre=1500.0, swing=700.0, warble=25.0, level=0.4, attack=0.005, release=0.03):
    n, phase, out = int(seconds * rate), 0.0, []
    for i in range(n):
        t = i / rate
        phase += 2 * math.pi * (centre + swing * math.sin(2 * math.pi * warble * t)) / rate
        a = min(1.0, math.sin(math.pi / 2 * min(1.0, t / attack)) ** 2, math.cos(math.pi / 2 * max(0.0, (t - seconds + release) / release)) ** 2)
        out.append(level * a * math.sin(phase))
    return out
gap, pause = [0.0] * int(0.07 * rate), [0.0] * int(0.55 * rate)
x = beep() + gap + beep() + gap + beep() + gap + beep() + pause
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate)
    w.writeframes(b"".join(struct.pack("<h", round(v * 32767)) for v in x))
PY
sox -n "${fmt[@]}" "$out/mute_on.wav" synth 0.25 sine 660-330 fade q 0.005 0.25 0.05 vol 0.35
sox -n "${fmt[@]}" "$out/mute_off.wav" synth 0.25 sine 330-660 fade q 0.005 0.25 0.05 vol 0.35
tone "$tmp/c1.wav" 0.1 1047 0.3; tone "$tmp/c2.wav" 0.1 784 0.3; tone "$tmp/c3.wav" 0.22 523 0.3
sox "$tmp/c1.wav" "$tmp/c2.wav" "$tmp/c3.wav" "$out/announce.wav"
ls -l "$out"
