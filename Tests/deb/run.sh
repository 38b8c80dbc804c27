#!/usr/bin/env bash
# The Debian package as an owner meets it: built by deploy/build-deb in the Debian 13 chroot (so dpkg-shlibdeps
# sees Debian 13's libraries), then installed with apt into a fresh Debian 13 system that has never seen the
# project (tools/debian-chroot.sh --fresh), where Tests/deb/inside.sh checks the install, the programs, an
# upgrade, a downgrade, a removal and a purge. Then the fleet's way: a signed apt repository made with
# deploy/apt-repo (aptly, GnuPG), and another fresh Debian 13 set up as deploy/README.md tells a speaker's owner,
# where Tests/deb/inside-repo.sh installs from it, upgrades through unattended-upgrades and rolls back with apt.
#   Tests/deb/run.sh [--suite SUITE]     (default trixie; needs root, as tools/debian-chroot.sh does)
set -euo pipefail
cd "$(dirname "$0")/../.."
suite=trixie
[ "${1:-}" != --suite ] || suite="$2"
out="out/deb-$suite"
rm -rf "$out"
mkdir -p "$out"

echo "== deploy/build-deb in the $suite chroot (the release build, then the package)"
# The newer package is this commit's (build-deb's own version); the "previous release" is the same files under a
# lower version, so the upgrade and the downgrade between them are what apt does between two real releases.
bash tools/debian-chroot.sh --suite "$suite" -- bash -c '
    set -euo pipefail
    bash tools/install-deps.sh --package >&2
    # A build folder of its own: the release build on this machine (tools/test.sh) uses .build-release.
    new="$(deploy/build-deb --out "$1" --scratch-path "$2")"
    bin="$(swift build -c release --scratch-path "$2" --show-bin-path)"
    old="$(deploy/build-deb --binary "$bin/hound-speaker" --local "$bin/houndify-local" --version 0.0.1+deb0 --out "$1" 2>/dev/null)"
    printf "%s\n" "$new" > "$1/new"; printf "%s\n" "$old" > "$1/old"
' bash "$out" ".build-release-$suite" 2>&1 | tee "$out/build.log" | grep -E "^(E|W|I|N): |^build-deb|^/|error" || true
[ -s "$out/new" ] && [ -s "$out/old" ] || { echo "deb: build-deb failed (all of it in $out/build.log)" >&2; exit 1; }
if grep -E "^E: " "$out/build.log"; then echo "deb: lintian found errors (above)" >&2; exit 1; fi

echo "== install, run, upgrade, downgrade, remove and purge in a fresh $suite system"
bash tools/debian-chroot.sh --suite "$suite" --fresh -- bash Tests/deb/inside.sh "$(cat "$out/old")" "$(cat "$out/new")"

echo "== a signed apt repository (deploy/apt-repo): the previous release published, then this one"
repo="$out/repo"
bash deploy/apt-repo init "$repo" > "$out/repo.log"
old_local="$(cat "$out/old")"; old_local="${old_local/hound-speaker_/hound-speaker-local_}"
new_local="$(cat "$out/new")"; new_local="${new_local/hound-speaker_/hound-speaker-local_}"
# What the speakers see before and after the update is published: aptly's public tree at each step (the test
# switches its source from one to the other, as a web server's root would change).
bash deploy/apt-repo add "$repo" "$(cat "$out/old")" "$old_local" --suite "$suite" >> "$out/repo.log"
cp -a "$repo/public" "$repo/before"
bash deploy/apt-repo add "$repo" "$(cat "$out/new")" "$new_local" --suite "$suite" >> "$out/repo.log"
cp -a "$repo/public" "$repo/after"
ln -sfn before "$repo/served"
bash deploy/apt-repo sources "$repo" "file://$PWD/$repo/served" --suite "$suite" > "$out/hound-speaker.sources"

echo "== a fresh $suite speaker on the repository: install, unattended upgrade, rollback"
bash tools/debian-chroot.sh --suite "$suite" --fresh -- bash Tests/deb/inside-repo.sh "$PWD/$out" \
    "$(dpkg-deb -f "$(cat "$out/old")" Version)" "$(dpkg-deb -f "$(cat "$out/new")" Version)"
