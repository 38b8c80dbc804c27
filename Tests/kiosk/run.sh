#!/usr/bin/env bash
# The kiosk page in headless Chromium against `run` and the local service. Uses the official-SDK test venv for
# pytest and websocket-client (Tests/sdk/setup-venv.sh). Screenshots of each state at each screen size are kept
# in out/kiosk/ (KIOSK_ARTEFACTS=dir elsewhere), and the path is printed at the end.
#   HOUND_SPEAKER_BIN=/path/to/hound-speaker Tests/kiosk/run.sh [extra pytest args]
set -uo pipefail
# The speaker under test keeps its conversation here, not in the user's state directory.
export XDG_STATE_HOME="$(mktemp -d)"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
bash "$REPO/Tests/sdk/setup-venv.sh" || { echo "run.sh: Tests/sdk/setup-venv.sh failed" >&2; exit 2; }
[[ "${HOUND_SPEAKER_BIN:-}" == */* ]] && export HOUND_SPEAKER_BIN="$(realpath "$HOUND_SPEAKER_BIN")"
cd "$HERE"
status=0
"$REPO/.venv-sdk/bin/python" -m pytest "$HERE/test_kiosk.py" -v -rs -p no:cacheprovider "$@" || status=$?
# Where test_kiosk.py keeps its screenshots of each state at each screen size (git-ignored).
echo "kiosk screenshots: ${KIOSK_ARTEFACTS:-$REPO/out/kiosk}"
exit "$status"
