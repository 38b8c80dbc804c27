#!/usr/bin/env bash
# The hot-phrase tools' unit tests (tests/): the format-1 log-mel front end, and both model files' export round
# trip (.hpm format 1 and the speech-embedding format 2). They need python3 and numpy only (Debian's python3-numpy,
# which tools/install-deps.sh installs); the one test against keras itself is skipped without tensorflow, and runs
# with the training venv:  PYTHON=.venv-hotphrase/bin/python tools/hotphrase/test.sh
#   tools/hotphrase/test.sh [unittest options, e.g. -v]
set -euo pipefail
cd "$(dirname "$0")"
py="${PYTHON:-python3}"
if ! "$py" -c "import numpy" 2>/dev/null; then
    echo "tools/hotphrase/test.sh: $py has no numpy (Debian: python3-numpy, which tools/install-deps.sh installs)" >&2
    exit 1
fi
# the product's tests, then the lab's (lab/test.sh)
PYTHONDONTWRITEBYTECODE=1 "$py" -m unittest discover -s tests "$@"
PYTHON="$py" exec bash lab/test.sh "$@"
