#!/usr/bin/env bash
# Runs inside a fresh Debian system (Tests/deb/run.sh): a speaker set up for the fleet's apt repository as
# deploy/README.md ("Updates through apt") tells its owner. OUT holds hound-speaker.sources, the repository's
# key (repo/public/hound-speaker-archive-keyring.gpg) and repo/served, a link this script moves from the
# repository before the update (OLD) to after it (NEW). Prints a line per check and "N passed, N failed".
set -uo pipefail
out="$1" old="$2" new="$3"
. "$(dirname "$0")/checks.sh"
installed() { [ "$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null)" = "$2" ]; }
config=/etc/hound-speaker/speaker.toml
state=/var/lib/hound-speaker

# The owner's two files: the key and the source (deploy/README.md).
install -D -m 0644 "$out/repo/public/hound-speaker-archive-keyring.gpg" /etc/apt/keyrings/hound-speaker-archive-keyring.gpg
install -m 0644 "$out/hound-speaker.sources" /etc/apt/sources.list.d/hound-speaker.sources
check "apt-get update verifies the repository's signature" bash -c "apt-get update > /tmp/u.log 2>&1 && ! grep -qiE 'NO_PUBKEY|not signed|W: GPG' /tmp/u.log || { cat /tmp/u.log; false; }"
check "apt install hound-speaker from the repository" apt install hound-speaker hound-speaker-local
check "the repository's release is installed" installed hound-speaker "$old"

# What an owner has by now: their settings and the speaker's state.
printf '\n# the owner was here\n' >> "$config"
mkdir -p "$state"
echo '{"timers":[]}' > "$state/timers.json"; echo true > "$state/mute"
chown -R hound-speaker:hound-speaker "$state"

# Unattended upgrades for this repository, as deploy/README.md gives them.
check "unattended-upgrades installs" apt install unattended-upgrades
echo 'Unattended-Upgrade::Origins-Pattern:: "origin=hound-speaker,codename=${distro_codename}";' \
    > /etc/apt/apt.conf.d/51hound-speaker-unattended-upgrades

# The fleet publishes the update.
ln -sfn after "$out/repo/served"
check "apt-get update sees the update" bash -c "apt-get update -q >/dev/null 2>&1 && apt-cache policy hound-speaker | grep -q 'Candidate: $new'"
check "unattended-upgrade installs it" bash -c "unattended-upgrade -v > /tmp/uu.log 2>&1 || { tail -30 /tmp/uu.log; false; }"
check "the update is installed, the local service with it" bash -c "[ \"\$(dpkg-query -W -f='\${Version}' hound-speaker)\" = '$new' ] && [ \"\$(dpkg-query -W -f='\${Version}' hound-speaker-local)\" = '$new' ] || { tail -30 /tmp/uu.log; false; }"
check "the upgrade kept the owner's config, 0600" bash -c "grep -q 'the owner was here' $config && [ \"\$(stat -c '%a %U' $config)\" = '600 hound-speaker' ]"
check "the upgrade kept the timers and the mute state" bash -c "[ -f $state/timers.json ] && grep -qx true $state/mute"
check "the repository keeps the previous release for a rollback" bash -c "apt-cache madison hound-speaker | grep -q ' $old '"
check "rollback with apt to the previous release" apt install --allow-downgrades "hound-speaker=$old" "hound-speaker-local=$old"
check "the previous release is installed" installed hound-speaker "$old"
check "the rollback kept the config, the timers and the mute state" bash -c "grep -q 'the owner was here' $config && [ -f $state/timers.json ] && grep -qx true $state/mute"
check "the binary runs after the rollback" bash -c "hound-speaker --version | grep -qx '0.1.0'"

finish
