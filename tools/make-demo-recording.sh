#!/usr/bin/env bash
# Makes the demo's recordings (espeak-ng, en-us, 16 kHz mono), committed so the demo needs no espeak-ng command:
#   share/demo/what-time-is-it.wav            the question after a button press: 0.4 s of room, the question, 1.5 s
#   share/demo/ok-hound-what-time-is-it.wav   2.5 s of room tone (the detector needs about 2 s of audio before it
#                                             can judge), "OK Hound", 0.5 s, then the question: the hot phrase demo
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/share/demo"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
espeak-ng -v en-us -s 160 -w "$tmp/a.wav" "OK Hound"
espeak-ng -v en-us -s 160 -w "$tmp/b.wav" "what time is it"
sox "$tmp/a.wav" -r 16000 "$tmp/a16.wav" pad 2.5 0.5
sox "$tmp/b.wav" -r 16000 "$tmp/b16.wav" pad 0 1.5
sox "$tmp/a16.wav" "$tmp/b16.wav" "$tmp/speech.wav"
# A quiet room (pink noise about 50 dB below the speech), not digital silence: what a microphone hears.
sox -n -r 16000 -c 1 "$tmp/room.wav" synth "$(soxi -D "$tmp/speech.wav")" pinknoise vol 0.004
mkdir -p "$out"
sox -m "$tmp/speech.wav" "$tmp/room.wav" -b 16 "$out/ok-hound-what-time-is-it.wav"
sox "$tmp/b.wav" -r 16000 -b 16 "$out/what-time-is-it.wav" pad 0.4 1.5
soxi -D "$out/ok-hound-what-time-is-it.wav" "$out/what-time-is-it.wav"
