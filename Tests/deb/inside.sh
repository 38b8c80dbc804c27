#!/usr/bin/env bash
# Runs inside a fresh Debian system (Tests/deb/run.sh): OLD and NEW are the paths of two hound-speaker packages
# (hound-speaker-local_* beside each). Prints a line per check and "N passed, N failed" at the end.
set -uo pipefail
old="$1" new="$2"
old_local="${old/hound-speaker_/hound-speaker-local_}" new_local="${new/hound-speaker_/hound-speaker-local_}"
. "$(dirname "$0")/checks.sh"
config=/etc/hound-speaker/speaker.toml
state=/var/lib/hound-speaker

check "apt-get update" apt update
check "apt installs the package and brings every dependency" apt install "$old" "$old_local"
check "dpkg knows it installed" bash -c "dpkg-query -W -f='\${Status}' hound-speaker | grep -qx 'install ok installed'"
check "the binary runs: --version" bash -c "hound-speaker --version | grep -qx '0.1.0'"
check "ldd finds every library" bash -c "! ldd /usr/bin/hound-speaker | grep -q 'not found'"
check "say --output writes speech" bash -c "hound-speaker say 'The package works.' --output /tmp/say.wav && [ \$(stat -c %s /tmp/say.wav) -gt 10000 ]"
check "demo: a whole interaction" bash -c "hound-speaker demo --output /tmp/demo.wav > /tmp/demo.log 2>&1; grep -q 'the answer was spoken into /tmp/demo.wav' /tmp/demo.log || { cat /tmp/demo.log; false; }"
check "the service user, in audio, gpio and spi" bash -c "id -nG hound-speaker | tr ' ' '\n' | grep -qx audio && id -nG hound-speaker | tr ' ' '\n' | grep -qx gpio && id -nG hound-speaker | tr ' ' '\n' | grep -qx spi"
check "the config is the service user's alone (0600)" bash -c "[ \"\$(stat -c '%a %U %G' $config)\" = '600 hound-speaker hound-speaker' ]"
check "the config's folder: the service's group may write it (setup mode saves there), no one else" bash -c "[ \"\$(stat -c '%a %U %G' /etc/hound-speaker)\" = '775 root hound-speaker' ]"
check "the config is a conffile" bash -c "dpkg-query -W -f='\${Conffiles}' hound-speaker | grep -q ' $config '"
unit="$(dpkg -L hound-speaker | grep -E '/systemd/system/hound-speaker.service$' | head -1)"
check "the unit runs /usr/bin/hound-speaker" grep -q "^ExecStart=/usr/bin/hound-speaker run --config $config" "$unit"
check "the unit is enabled" test -L /etc/systemd/system/multi-user.target.wants/hound-speaker.service
check "the unit takes the SD card's settings first" grep -q "^ExecStartPre=+-/usr/bin/hound-speaker setup --import /boot/firmware/hound-speaker.toml --config $config" "$unit"
# The import as the unit runs it (root): the key merged, the config still the service user's alone, the card's file gone.
mkdir -p /tmp/card && printf '[location]\nlatitude = 51.5\nlongitude = -0.12\n' > /tmp/card/hound-speaker.toml
check "setup --import takes the card's settings into the config" bash -c "hound-speaker setup --import /tmp/card/hound-speaker.toml --config $config && grep -qx 'latitude = 51.5' $config"
check "the imported config is still the service user's alone (0600)" bash -c "[ \"\$(stat -c '%a %U %G' $config)\" = '600 hound-speaker hound-speaker' ]"
check "the card's file is gone" test ! -e /tmp/card/hound-speaker.toml
check "the local service for demo and serve" test -x /usr/libexec/hound-speaker/houndify-local

# What an owner has by now: their own settings and the speaker's state (timers, conversation, mute).
printf '\n# the owner was here\n' >> "$config"
mkdir -p "$state"
echo '{"timers":[]}' > "$state/timers.json"; echo muted > "$state/mute"
chown -R hound-speaker:hound-speaker "$state"

check "upgrade with apt to the newer package" apt install "$new" "$new_local"
check "the upgrade is the newer version" bash -c "[ \"\$(dpkg-query -W -f='\${Version}' hound-speaker)\" = \"$(dpkg-deb -f "$new" Version)\" ]"
check "the upgrade kept the owner's config" grep -q "the owner was here" "$config"
check "the upgrade kept the config's mode and owner" bash -c "[ \"\$(stat -c '%a %U' $config)\" = '600 hound-speaker' ]"
check "the upgrade kept the state" bash -c "[ -f $state/timers.json ] && grep -qx muted $state/mute"
check "downgrade (rollback) with apt to the previous package" apt install --allow-downgrades "$old" "$old_local"
check "the rollback is the previous version" bash -c "[ \"\$(dpkg-query -W -f='\${Version}' hound-speaker)\" = \"$(dpkg-deb -f "$old" Version)\" ]"
check "the rollback kept the config and the state" bash -c "grep -q 'the owner was here' $config && grep -qx muted $state/mute"
check "remove" apt remove hound-speaker-local hound-speaker
check "removal keeps the config and the state" bash -c "grep -q 'the owner was here' $config && [ -f $state/timers.json ]"
check "purge" apt purge hound-speaker
check "purge removes the config" test ! -e "$config"
check "purge removes the state" test ! -e "$state"
check "purge removes the config's statoverride" bash -c "! dpkg-statoverride --list $config"

# deploy/install.sh, as an owner runs it on the speaker: the package with apt, a first config given.
printf '[board]\nprofile = "generic-breadboard"\n' > /tmp/mine.toml
check "deploy/install.sh --deb installs the package" bash -c "bash deploy/install.sh --deb '$new' --config /tmp/mine.toml > /tmp/install.log 2>&1 || { cat /tmp/install.log; false; }"
check "install.sh: the newer version is installed" bash -c "[ \"\$(dpkg-query -W -f='\${Version}' hound-speaker)\" = \"$(dpkg-deb -f "$new" Version)\" ]"
check "install.sh: the given config, the service user's alone" bash -c "grep -q generic-breadboard $config && [ \"\$(stat -c '%a %U' $config)\" = '600 hound-speaker' ]"
check "install.sh again changes nothing" bash -c "bash deploy/install.sh --deb '$new' --config /tmp/mine.toml > /tmp/install2.log 2>&1 && grep -q 'is installed already' /tmp/install2.log && tail -3 /tmp/install2.log | grep -q 'done: 0 change(s)' || { cat /tmp/install2.log; false; }"

finish
