#!/usr/bin/env bash
# The minimum to measure the household's personal path (issue #37, part 2) on a fresh machine: no generic heads
# (they take hours to train), no threshold side (the bank's shipped z is used). Idempotent: every step is skipped
# when its output is there. BENCHMARKS.md, "Issue #37, part 2, session 6", gives the times and the runs.
#
#   tools/hotphrase/household-setup.sh WORK MIRRORS [WORD ...]       (default words: jarvis computer)
#
# WORK: a work folder outside the repository (e.g. /var/tmp/h37). MIRRORS: a folder holding the snapshots
# get_public_negatives reads (jimbozhang+speechocean762, Jakobovski+free-spoken-digit-dataset,
# OpenVoiceOS+ovos-ww-community-dataset, chaeyoung-lee+wids_tutorial, each as OWNER+NAME/repo, a bare git
# directory).
# FRONTENDS (environment, default "none"): the front ends the renderings are embedded through; any other than none
# is the lab's (lab/README.md: e.g. speex-denoise, wpe), rendered by python -m hotphraselab.household_conditions.
# Every heavy step runs under nice -n 19, one at a time.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,14p "$0"; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mkdir -p "$1" && cd "$1" && pwd)"
mirrors="$2"
shift 2
words=("$@")
[ ${#words[@]} -gt 0 ] || words=(jarvis computer)
frontends=(${FRONTENDS:-none})
W="$work/W"
export PYTHONPATH="$here:$here/lab"
# the product's command, or the lab's for a front end of the lab's
via() { if [ "$1" = none ]; then echo "hotphrase.$2"; else echo "hotphraselab.$2"; fi; }
step() { echo "== $(date -u +%H:%M:%S) $*"; }
n19() { nice -n 19 "$@"; }

# 1. Debian packages: the held-out voices (espeak-ng, flite, festival) for the evaluation's babble noise, sox, and
#    libspeexdsp1 for the lab's speex-denoise front end (the speaker links it already).
need=(espeak-ng flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts sox libspeexdsp1 python3-venv)
missing=()
for p in "${need[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. Three small venvs: the embedding (requirements.txt's pins of what household_eval needs, not the training's
#    piper or pocketsphinx), the rooms (pyroomacoustics, as tools/hotphrase/room_rirs.py asks), the speaker
#    clusters (Resemblyzer, a measurement tool only; torch CPU: a local wheel on pip's find-links is preferred).
pin() { grep -E "^($(IFS='|'; echo "$*"))==" "$here/requirements.txt"; }
if [ ! -x "$work/venv/bin/python" ]; then
    step "venv (embedding)"
    python3 -m venv "$work/venv"
    n19 "$work/venv/bin/pip" install -q $(pin tensorflow-cpu numpy scipy soundfile pyopen-wakeword)
fi
# the lab's WPE front end (lab/hotphraselab/wpe.py) when it is asked for, also into a venv made before it
case " ${frontends[*]} " in *" wpe "*)
    "$work/venv/bin/python" -c "import nara_wpe" 2>/dev/null || n19 "$work/venv/bin/pip" install -q $(pin nara_wpe) ;;
esac
if [ ! -x "$work/venv-room/bin/python" ]; then
    step "venv (rooms)"
    python3 -m venv "$work/venv-room"
    n19 "$work/venv-room/bin/pip" install -q numpy scipy pyroomacoustics==0.10.1
fi
if [ ! -x "$work/venv-resem/bin/python" ]; then
    step "venv (Resemblyzer)"
    python3 -m venv "$work/venv-resem"
    # a CPU-only torch wheel on pip's find-links first (PyPI's torch pulls in gigabytes of CUDA libraries)
    local_torch="$(ls "${PIP_FIND_LINKS:-/nonexistent}"/torch-*+cpu-*.whl 2>/dev/null | head -1 || true)"
    [ -z "$local_torch" ] || n19 "$work/venv-resem/bin/pip" install -q "$local_torch"
    # webrtcvad (Resemblyzer's) imports pkg_resources, which setuptools 81 dropped
    n19 "$work/venv-resem/bin/pip" install -q resemblyzer scikit-learn "setuptools<81"
fi

# 3. The held-out sentences' first 400 (the evaluation's babble bank uses the first 300 phrase-free ones; the
#    synthesis jobs are drawn in order from one seed, so these are the first 400 of make_data's 3,500).
if [ ! -f "$W/cache/sent_eval.npz" ]; then
    step "held-out sentences (make_data, 400)"
    n19 "$work/venv/bin/python" -m hotphrase.make_data jarvis "$W" --positives 0 --confusables 0 \
        --eval-positives 0 --eval-confusables 0 --sentences 0 --eval-sentences 400 --piper-sentences 0 \
        --l2-positives 0 --l2-confusables 0 --l2-sentences 0 --procs 2
fi

# 4. The public negatives: the test side (their evaluation split) and the bank's sources (training split).
for s in speechocean762 fsdd ovos speech_commands; do
    if [ ! -f "$W/public/manifest-$s.tsv" ]; then
        step "public negatives: $s"
        n19 "$work/venv/bin/python" -m hotphrase.get_public_negatives "$W" --mirrors "$mirrors" --sources "$s"
    fi
done

# 5. The 12 image-source rooms.
if [ ! -f "$work/rooms.npz" ]; then
    step "rooms (room_rirs)"
    PYTHONPATH="$here:$root/tools/bench" n19 "$work/venv-room/bin/python" -m hotphrase.room_rirs "$work/rooms.npz"
fi

# 6. The keyword folders' speakers.
for w in "${words[@]}"; do
    if [ ! -f "$work/spk/speakers-$w.json" ]; then
        step "speakers of $w (cluster_speakers)"
        mkdir -p "$work/spk"
        n19 "$work/venv-resem/bin/python" -m hotphrase.cluster_speakers "$work/spk/speakers-$w.json" --words "$w"
    fi
done

# 7. Renderings, per front end: the keyword clips clean / 10 dB / room / room + 10 dB, and the test side clean
#    (the public evaluation folders and the real-speech evaluation speakers, as evaluate_format2 streams them).
for fe in "${frontends[@]}"; do
    out="$work/cond-$fe"
    step "renderings through $fe: ${words[*]}"
    n19 "$work/venv/bin/python" -m "$(via "$fe" household_conditions)" "$W" "$out" --words "${words[@]}" --clean \
        --snr 10 --rirs "$work/rooms.npz" --room-snr 10 --frontend "$fe" --procs 2
    step "test side through $fe"
    n19 "$work/venv/bin/python" -m "$(via "$fe" household_conditions)" "$W" "$out" --words --clean --snr --only clean \
        --test-side-extra "$W/public/eval/speechocean762" "$W/public/eval/fsdd" "$W/public/eval/ovos" \
        --test-side-real-speech --frontend "$fe" --procs 2
done
# 8. The negative bank made again through each front end (without one it is the shipped bank, bit for bit).
mkdir -p "$work/bank"
for fe in "${frontends[@]}"; do
    [ "$fe" != none ] || continue
    if [ ! -f "$work/bank/bank-$fe.hpm" ]; then
        step "negative bank through $fe"
        n19 "$work/venv/bin/python" -m hotphraselab.negative_bank "$work/bank/bank-$fe.hpm" --public "$W/public" \
            --z-threshold 5.9 --frontend "$fe"
    fi
done
step "done; the runs: BENCHMARKS.md, Issue #37, part 2, session 6"
