#!/usr/bin/env bash
# Runs inside a fresh Debian 13 system of either architecture (Tests/arm64/run.sh): a speaker set up for the fleet's
# apt repository, which holds the same release for amd64 and arm64, installs the one for its own architecture. OUT
# holds hound-speaker.sources and the repository (repo/public, its key there); VERSION is the release. Prints a
# line per check and "N passed, N failed".
set -uo pipefail
out="$1" version="$2"
. "$(dirname "$0")/../deb/checks.sh"
arch="$(dpkg --print-architecture)"
install -D -m 0644 "$out/repo/public/hound-speaker-archive-keyring.gpg" /etc/apt/keyrings/hound-speaker-archive-keyring.gpg
install -m 0644 "$out/hound-speaker.sources" /etc/apt/sources.list.d/hound-speaker.sources
check "apt-get update verifies the repository's signature" bash -c "apt-get update > /tmp/u.log 2>&1 && ! grep -qiE 'NO_PUBKEY|not signed|W: GPG' /tmp/u.log || { cat /tmp/u.log; false; }"
check "the repository offers $version for $arch" bash -c "apt-cache madison hound-speaker | grep -q ' $version '"
check "apt install hound-speaker from the repository" apt install hound-speaker
check "the $arch package is the one installed" \
    bash -c "[ \"\$(dpkg-query -W -f='\${Architecture} \${Version}' hound-speaker)\" = '$arch $version' ]"
check "it runs: --version" bash -c "hound-speaker --version | grep -qx '0.1.0'"
finish
