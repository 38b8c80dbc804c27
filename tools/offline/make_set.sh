#!/usr/bin/env bash
# The offline recogniser's command set (issue #63): every sentence of tools/offline/commands.txt said by ten
# synthetic voices that no part of the recogniser was tuned on (espeak-ng's US voice and two of its variants, flite's
# four, festival's three), 16 kHz mono with 0.3 s of quiet around each; and the same in a simulated room at 10 dB
# SNR (sox's reverb, then real noise, Speech Commands' background recordings, mixed 10 dB under the speech).
#   tools/offline/make_set.sh OUT [NOISE.flac...]
# OUT/clean/VOICE/NNN.wav and OUT/noisy/VOICE/NNN.wav, each with NNN.txt (its sentence), for
# `hound-speaker-bench offline`. Needs espeak-ng, flite, festival (festvox-kallpc16k, festvox-kdlpc16k,
# festvox-us-slt-hts) and sox.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: make_set.sh OUT [NOISE.flac...]}"; shift
noises=("$@")
voices=(espeak:en-us espeak:en-us+f3 espeak:en-us+m3 flite:kal16 flite:awb flite:rms flite:slt
        festival:voice_kal_diphone festival:voice_ked_diphone festival:voice_cmu_us_slt_arctic_hts)
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
n=0
while IFS= read -r sentence; do
    [ -n "$sentence" ] || continue
    n=$((n + 1)); id="$(printf %03d "$n")"
    for v in "${voices[@]}"; do
        engine="${v%%:*}"; voice="${v#*:}"; name="${engine}-${voice//[^a-z0-9]/_}"
        mkdir -p "$out/clean/$name" "$out/noisy/$name"
        case "$engine" in
            espeak) espeak-ng -v "$voice" -w "$tmp/raw.wav" "$sentence" ;;
            flite) flite -voice "$voice" -t "$sentence" -o "$tmp/raw.wav" ;;
            festival) echo "$sentence" | text2wave -eval "($voice)" -o "$tmp/raw.wav" ;;
        esac
        sox "$tmp/raw.wav" -r 16000 -c 1 -b 16 "$out/clean/$name/$id.wav" pad 0.3 0.3 norm -3
        echo "$sentence" > "$out/clean/$name/$id.txt"
        if [ ${#noises[@]} -gt 0 ]; then
            noise="${noises[$(( (n + ${#name}) % ${#noises[@]} ))]}"
            sox "$out/clean/$name/$id.wav" "$tmp/room.wav" reverb 40 50 60 norm -3
            python3 "$here/mix.py" "$tmp/room.wav" "$noise" 10 "$out/noisy/$name/$id.wav" "$n"
            echo "$sentence" > "$out/noisy/$name/$id.txt"
        fi
    done
done < "$here/commands.txt"
echo "make_set: $n sentences x ${#voices[@]} voices in $out"
