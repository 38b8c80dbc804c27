#!/usr/bin/env bash
# Runs the official Houndify Python SDK (2.1.4) against `hound-speaker serve`.
#   HOUND_SPEAKER_BIN=/path/to/hound-speaker Tests/sdk/run.sh [extra pytest args]
# Without HOUND_SPEAKER_BIN the tests are skipped (reported as such). Exits with pytest's code.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

bash "$HERE/setup-venv.sh" || { echo "run.sh: setup-venv.sh failed" >&2; exit 2; }

if [ -n "${HOUND_SPEAKER_BIN:-}" ]; then
    # The tests start the binary themselves; make a relative path independent of pytest's cwd.
    case "$HOUND_SPEAKER_BIN" in
        /*) ;;
        */*) HOUND_SPEAKER_BIN="$(cd "$(dirname "$HOUND_SPEAKER_BIN")" && pwd)/$(basename "$HOUND_SPEAKER_BIN")" ;;
    esac
    export HOUND_SPEAKER_BIN
fi

exec "$REPO/.venv-sdk/bin/python" -m pytest "$HERE/test_official_sdk.py" \
    -v -rs -p no:cacheprovider "$@"
