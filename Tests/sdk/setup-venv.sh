#!/usr/bin/env bash
# Creates (or refreshes) the virtualenv $REPO/.venv-sdk for the official Houndify SDK test and
# installs Tests/sdk/requirements.txt into it. Idempotent: a venv that already matches
# requirements.txt and imports is left alone.
#
# Debian 12 packages this needs (installed here with apt-get when missing and run as root):
#   python3 python3-venv       `python3 -m venv` (Debian ships ensurepip only in python3-venv)
#   gcc libc6-dev python3-dev  the houndify 2.1.4 sdist compiles its C extension pySHSpeex
#                              (SoundHound's bundled Speex 1.2beta3; no system libspeex is used);
#                              python3-dev gives Python.h for Debian's /usr/bin/python3
#   espeak-ng sox              the test synthesises its speech fixture with them
# One line: apt-get install -y --no-install-recommends python3 python3-venv python3-dev gcc libc6-dev espeak-ng sox
#
# A pyenv CPython (e.g. /root/.pyenv/versions/3.11.x) carries its own headers, so python3-dev
# is only needed when `python3` is Debian's. Choose the interpreter with PYTHON=/path/to/python3.
# Everything else comes from PyPI (pip builds the sdist in an isolated env with setuptools/wheel).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="$REPO/.venv-sdk"
REQS="$HERE/requirements.txt"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.requirements.stamp"

log() { echo "setup-venv: $*" >&2; }

# The check run on the finished venv: the SDK, its Speex extension and pytest all import, and
# pySHSpeex produces the 80-byte Speex header StreamingHoundClient(useSpeex=True) sends.
venv_ok() {
    "$VENV/bin/python" - <<'PY' 2>/dev/null
import houndify, pySHSpeex, pytest, pytest_timeout, zoneinfo, websocket
assert houndify.__version__ == "2.1.4", houndify.__version__
header = pySHSpeex.Init(0)
assert len(header) == 80 and header[:8] == b"Speex   ", header
frame = pySHSpeex.EncodeFrame(b"\0" * 640)
assert len(frame) == int.from_bytes(frame[:2], "big") + 2, frame
zoneinfo.ZoneInfo("Asia/Kolkata")
PY
}

stamp_value() {
    {
        sha256sum "$REQS" | cut -d' ' -f1
        "$PYTHON" -c 'import sys; print(sys.version)'
    } | sha256sum | cut -d' ' -f1
}

missing=()
need_pkg() { case " ${missing[*]-} " in *" $1 "*) ;; *) missing+=("$1") ;; esac; }

command -v espeak-ng >/dev/null 2>&1 || need_pkg espeak-ng
command -v sox >/dev/null 2>&1 || need_pkg sox

up_to_date=false
if command -v "$PYTHON" >/dev/null 2>&1 && [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] \
    && [ "$(cat "$STAMP")" = "$(stamp_value)" ] && venv_ok; then
    up_to_date=true
fi

if ! $up_to_date; then
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        need_pkg python3
    else
        "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkg python3-venv
        "$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
            || need_pkg python3-dev
        cc="$("$PYTHON" -c 'import sysconfig; print((sysconfig.get_config_var("CC") or "cc").split()[0])')"
        command -v "$cc" >/dev/null 2>&1 || need_pkg gcc
    fi
    [ -f /usr/include/stdio.h ] || need_pkg libc6-dev
fi

if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        log "installing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
        log "missing: ${missing[*]}; install them with: apt-get install ${missing[*]}"
        exit 1
    fi
fi

if $up_to_date; then
    log "$VENV is up to date"
    exit 0
fi

if [ -e "$VENV" ]; then
    log "recreating $VENV"
    rm -rf "$VENV"
fi
log "creating $VENV with $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$REQS" >&2

if ! venv_ok; then
    log "the venv was built but the SDK check failed:"
    venv_ok_verbose() { "$VENV/bin/python" -c 'import houndify, pySHSpeex; print(pySHSpeex.Init(0))'; }
    venv_ok_verbose >&2 || true
    exit 1
fi
stamp_value >"$STAMP"
log "ready: $VENV (houndify 2.1.4 with pySHSpeex)"
