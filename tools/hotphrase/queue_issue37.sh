#!/usr/bin/env bash
# Issue #37, part 1 (the new ship rule): recipe e1 with the public negatives on the four real keywords, three seeds
# each, then "OK Hound" the same way, its heads exported for the Swift detector and run over the 10 h of real
# recordings, and v9 over the same 10 h as the control. One job at a time, each under `nice -n 19` with one
# thread (the machine is shared); every step leaves WORK/logs/STEP.done, so the queue can be stopped and started
# again and goes on where it stopped. BENCHMARKS.md ("issue #37") has what it measured.
#
#   tools/hotphrase/queue_issue37.sh            # in the background: nohup ... > WORK/logs/queue.log 2>&1 &
#
# Environment: HOTPHRASE_WORK (default tools/hotphrase/work), SEEDS (default "1 2 3"), KEYWORDS (default
# "view-glass jarvis snowboy computer"), SWIFT_BIN (a built hound-speaker; default the
# release build .build-release/release/hound-speaker: the debug build is far too slow for 10 h of audio),
# HOTPHRASE_MIRRORS (the folder of the five snapshots get_public_negatives reads, as OWNER+NAME/repo; needed until
# its step is done). Needs the venv (setup-venv.sh) and those snapshots (README.md, "Real negatives from public
# recordings").
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
py="$root/.venv-hotphrase/bin/python"
# The exporter reads the TFLite graphs with ai-edge-litert, which the training venv does not have
# (tools/hotphrase/EMBEDDING.md: requirements-embedding.txt in a venv of its own).
export_py="${EXPORT_PY:-$root/.venv-embedding/bin/python}"
W="${HOTPHRASE_WORK:-$here/work}"
SEEDS="${SEEDS:-1 2 3}"
KEYWORDS="${KEYWORDS:-view-glass jarvis snowboy computer}"
SWIFT_BIN="${SWIFT_BIN:-$root/.build-release/release/hound-speaker}"
logs="$W/logs"
mkdir -p "$logs"
export TF_CPP_MIN_LOG_LEVEL=2 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1

# step NAME COMMAND...: runs once (NAME.done), logs to NAME.log, its start, end and exit status to the queue log
step() {
    local name="$1"; shift
    if [ -e "$logs/$name.done" ]; then echo "$(date -u +%FT%TZ) skip $name (done)"; return 0; fi
    echo "$(date -u +%FT%TZ) start $name: $*"
    local t0=$SECONDS
    local rc=0
    nice -n 19 "$@" > "$logs/$name.log" 2>&1 || rc=$?
    if [ "$rc" = 0 ]; then
        touch "$logs/$name.done"
        echo "$(date -u +%FT%TZ) done $name in $((SECONDS - t0)) s"
    else
        # rc kept first: the date's command substitution would set $? to 0 before it is read
        echo "$(date -u +%FT%TZ) FAILED $name (exit $rc) after $((SECONDS - t0)) s: see $logs/$name.log"
        return 1
    fi
}

# the 10 h of real recordings of BENCHMARKS.md ("Issue #15, session 4"), in two halves: what an e1 head with the
# public negatives trained on (the real-speech training speakers, the public train folders) and what it did not
real_sets() {  # real_sets train|eval
    local s d
    for d in "$W/public/$1"/*; do echo --set "public-$1/$(basename "$d")=$d"; done
    echo --real-speech "$1"
}

step public-negatives "$py" -m hotphrase.get_public_negatives "$W" || exit 1
public=("$W"/public/eval/*)

e1_phrase() {  # e1_phrase PHRASE [make_data options...]
    local k="$1"; shift
    step "$k-data" "$py" -m hotphrase.make_data "$k" "$W" --piper-sentences 300 --procs 1 "$@" || return 1
    step "$k-features" "$py" -m hotphrase.train "$k" "$W" --format 2 --procs 1 --features-only \
        --extra-negatives "$W/public/train" || return 1
    local n synthetic=(--no-synthetic)
    [ "$k" = ok-hound ] && synthetic=(--set-threshold)  # "OK Hound": the held-out synthetic voices, and its default
    for n in $SEEDS; do
        step "$k-train-s$n" "$py" -m hotphrase.train "$k" "$W" --format 2 --procs 1 --seed "$n" \
            --extra-negatives "$W/public/train" --out "$W/$k/e1-pub-s$n" || continue
        step "$k-eval-s$n" "$py" -m hotphrase.evaluate "$k" "$W" --format 2 --procs 1 --head "$W/$k/e1-pub-s$n" \
            "${synthetic[@]}" --extra-eval "${public[@]}"
    done
}

half=(--positives 2500 --confusables 2000 --l2-positives 600 --l2-confusables 500)
for k in $KEYWORDS; do
    if [ "$k" = computer ]; then e1_phrase computer; else e1_phrase "$k" "${half[@]}"; fi
done
e1_phrase ok-hound "${half[@]}"

# the control: v9 (the model e1 replaced, now the format-1 test fixture) over the same 10 h at its default sensitivity
# (threshold 0.999; BENCHMARKS.md, "the shipped model on 10 hours of real recordings", counted 16)
v9="$root/Tests/HotPhraseTests/Fixtures/ok-hound-v9.hpm"
if [ -x "$SWIFT_BIN" ]; then
    for half in train eval; do
        # shellcheck disable=SC2046
        step "v9-wakes-$half" "$py" -m hotphrase.real_wakes "$v9" --swift-bin "$SWIFT_BIN" \
            --threshold 0.999 --threshold 0.99684 --json "$W/v9-wakes-$half.json" $(real_sets $half)
    done
fi

# "OK Hound" for the Swift detector (format 2), its false wakes over the 10 h at its default sensitivity (the
# threshold evaluate --format 2 --set-threshold wrote: the 0.1 FA/h point) and at its 0.5 FA/h point, and the demo recording
for n in $SEEDS; do
    h="$W/ok-hound/e1-pub-s$n"
    [ -e "$logs/ok-hound-eval-s$n.done" ] || continue
    step "ok-hound-export-s$n" "$export_py" -m hotphrase.export_embedding "$h" "$h/ok-hound-e1.hpm" || continue
    [ -x "$SWIFT_BIN" ] || continue
    t01=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["threshold"])' "$h/head.json")
    t05=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["negatives"]["threshold_at_0.5_fa_per_hour"])' \
        "$h/eval.json" 2>/dev/null) || t05=""
    extra=(); [ -n "$t05" ] && extra=(--threshold "$t05")
    for half in train eval; do
        # shellcheck disable=SC2046
        step "ok-hound-wakes-s$n-$half" "$py" -m hotphrase.real_wakes "$h/ok-hound-e1.hpm" --swift-bin "$SWIFT_BIN" \
            --threshold "$t01" "${extra[@]}" --json "$h/wakes-$half.json" $(real_sets $half)
    done
    # the demo recording at the default sensitivity (the model's own threshold): a line per detection
    step "ok-hound-demo-s$n" "$SWIFT_BIN" hotphrase "$root/share/demo/ok-hound-what-time-is-it.wav" \
        --model "$h/ok-hound-e1.hpm" --threshold "$t01" --json
done
echo "$(date -u +%FT%TZ) queue finished"
