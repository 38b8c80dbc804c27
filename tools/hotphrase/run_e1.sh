#!/usr/bin/env bash
# Recipe e1, one command per phrase: synthesize the data, embed it with speech_embedding, train the head,
# evaluate (README.md: "Recipe e1").
#   tools/hotphrase/run_e1.sh [PHRASE] [hotphrase.make_data options...]
# Writes tools/hotphrase/work/PHRASE/e1/head.json, head.npz and eval.json; logs beside them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
phrase="${1:-ok-hound}"
shift || true
bash "$here/setup-venv.sh"
py="$root/.venv-hotphrase/bin/python"
work="$here/work"
mkdir -p "$work/$phrase/e1"
export TF_CPP_MIN_LOG_LEVEL=2
# piper's training sentences are 20 times slower to make than the Debian voices'; e1 has 300 of them
"$py" -m hotphrase.make_data "$phrase" "$work" --piper-sentences 300 "$@"
"$py" -m hotphrase.train_e1 "$phrase" "$work" 2>&1 | tee "$work/$phrase/e1/train.log"
synthetic=()
[ "$phrase" = ok-hound ] || synthetic=(--no-synthetic)  # the four real keywords: the recipe check is what counts
"$py" -m hotphrase.evaluate_e1 "$phrase" "$work" --set-threshold "${synthetic[@]}" 2>&1 | tee "$work/$phrase/e1/eval.log"
