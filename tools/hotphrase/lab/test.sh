#!/usr/bin/env bash
# The lab's unit tests (lab/tests/): the experiments' front ends, gates and measurement tools. Like the product's
# (../test.sh, which runs these too) they need python3 and numpy only; a test that needs more is skipped.
#   tools/hotphrase/lab/test.sh [unittest options, e.g. -v]
set -euo pipefail
cd "$(dirname "$0")/.."
# the product package from tools/hotphrase, the lab's from lab/, and the product's tests for their shared helpers
PYTHONPATH="$PWD:$PWD/lab:$PWD/tests${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
    exec "${PYTHON:-python3}" -m unittest discover -s lab/tests "$@"
