#!/usr/bin/env bash
# Makes the built-in earcons (share/earcons/*.wav) with sox: short, soft sounds at 16 kHz mono, each with 5 ms
# fades so they do not click. Rerun to change them; the WAVs are committed so the speaker needs no sox.
#   start_listening  a rising two-note chime (the speaker is listening)
#   stop_listening   the same two notes falling (it has stopped listening)
#   cancel           one short low note
#   error            two low buzzing pulses
#   timer            a timer going off: four bright beeps and a pause (played again and again until stopped)
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
tone "$tmp/beep.wav" 0.1 1760 0.4
sox -n "${fmt[@]}" "$tmp/short.wav" trim 0 0.1
sox -n "${fmt[@]}" "$tmp/pause.wav" trim 0 0.6
sox "$tmp/beep.wav" "$tmp/short.wav" "$tmp/beep.wav" "$tmp/short.wav" "$tmp/beep.wav" "$tmp/short.wav" "$tmp/beep.wav" "$tmp/pause.wav" "$out/timer.wav"
sox -n "${fmt[@]}" "$out/mute_on.wav" synth 0.25 sine 660-330 fade q 0.005 0.25 0.05 vol 0.35
sox -n "${fmt[@]}" "$out/mute_off.wav" synth 0.25 sine 330-660 fade q 0.005 0.25 0.05 vol 0.35
tone "$tmp/c1.wav" 0.1 1047 0.3; tone "$tmp/c2.wav" 0.1 784 0.3; tone "$tmp/c3.wav" 0.22 523 0.3
sox "$tmp/c1.wav" "$tmp/c2.wav" "$tmp/c3.wav" "$out/announce.wav"
ls -l "$out"
