#!/usr/bin/env bash
# The training pipeline's own virtual environment (.venv-hotphrase at the repository root, git-ignored), with
# the pinned packages of requirements.txt, the tools' own packages (hotphrase/ and the lab's lab/hotphraselab/,
# pyproject.toml), and the Debian packages it synthesizes voices with. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
need=(espeak-ng flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts sox python3-venv)
missing=()
for p in "${need[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
venv="$root/.venv-hotphrase"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r "$here/requirements.txt"  # a no-op when they are already there
# The tools' own packages, editable, so that `python -m hotphrase.NAME` (and hotphraselab.NAME) runs this checkout's
# code from any folder; once (pip would build it again on every run), and again only if the venv's points elsewhere
# or lacks the lab.
installed="$(cd / && "$venv/bin/python" -c 'import hotphrase, hotphraselab, os; print(os.path.dirname(os.path.dirname(hotphrase.__file__)))' 2>/dev/null || true)"
[ "$installed" = "$here" ] || "$venv/bin/pip" install -q --no-deps -e "$here"
