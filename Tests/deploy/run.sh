#!/usr/bin/env bash
# The deploy tests (tools/test.sh runs them after the SDK tests):
#   - deploy/hound-speaker.service: systemd-analyze verify is clean, security exposure <= 2.0
#   - deploy/install.sh --root: the tree and its modes, idempotent, an existing config never overwritten,
#     the runtime packages cover what the binary links
#   - deploy/push and deploy/logs through a real OpenSSH server on 127.0.0.1 with stand-in journalctl/systemctl/swift
#     on the remote side: install into a --root tree, quoting, --timings, Ctrl-C ending both sides
#   HOUND_SPEAKER_BIN=/path/to/hound-speaker Tests/deploy/run.sh [test names, e.g. test_ssh]
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export HOUND_SPEAKER_BIN="${HOUND_SPEAKER_BIN:-$REPO/.build/debug/hound-speaker}"
case "$HOUND_SPEAKER_BIN" in /*) ;; *) HOUND_SPEAKER_BIN="$PWD/$HOUND_SPEAKER_BIN" ;; esac

fail() { echo "Tests/deploy/run.sh: FAILED: $*" >&2; exit 1; }
[ -x "$HOUND_SPEAKER_BIN" ] || fail "no built binary at $HOUND_SPEAKER_BIN (swift build first)"
for tool in systemd-analyze /usr/sbin/sshd ssh ssh-keygen readelf ldd dpkg python3; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing: run tools/install-deps.sh"
done

echo "deploy tests: unit (systemd-analyze verify, security <= 2.0), install.sh --root (tree, modes, idempotence,"
echo "              config kept, runtime packages), push and logs over a real sshd (stand-ins on the remote PATH)"
cd "$HERE"
if [ $# -gt 0 ]; then command=(-m unittest -v "$@"); else command=(-m unittest discover -v -s . -p 'test_*.py'); fi
if python3 -W error::ResourceWarning "${command[@]}"; then
    echo "deploy tests: all passed"
else
    fail "see the test output above"
fi
