#!/usr/bin/env bash
# The fault-injection suite: `text`, `voice` and `run` against the misbehaving stand-in server (standin.py), and
# the soak, and `run` with its wall clock stepped (a shim built with gcc at test time: wallclock_shift.c). Uses the
# official-SDK test venv for pytest (Tests/sdk/setup-venv.sh).
#   HOUND_SPEAKER_BIN=/path/to/hound-speaker Tests/faults/run.sh [extra pytest args]
set -uo pipefail
# The commands under test keep their conversations here, not in the user's state directory.
export XDG_STATE_HOME="$(mktemp -d)"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
bash "$REPO/Tests/sdk/setup-venv.sh" || { echo "run.sh: Tests/sdk/setup-venv.sh failed" >&2; exit 2; }
# The tests run from this folder: a relative path to the binary must not depend on it.
[[ "${HOUND_SPEAKER_BIN:-}" == */* ]] && export HOUND_SPEAKER_BIN="$(realpath "$HOUND_SPEAKER_BIN")"
cd "$HERE"
exec "$REPO/.venv-sdk/bin/python" -m pytest "$HERE/test_faults.py" -rs -p no:cacheprovider "$@"
