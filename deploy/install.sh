#!/usr/bin/env bash
# Installs hound-speaker as a systemd service on a Raspberry Pi (Raspberry Pi OS 64-bit: Debian 13 or 12, arm64).
# Run as root from a source tree, or from the bundle deploy/push copies over (deploy/README.md explains both):
#
#   sudo deploy/install.sh                  build with the Swift toolchain on the Pi, then install
#   sudo deploy/install.sh --binary PATH    install a binary built elsewhere (cross-built, or sent by deploy/push)
#   deploy/install.sh --root DIR ...        only write the tree under DIR (DESTDIR works too): no apt, no users,
#                                           no systemctl; what would be done on a real system is printed
#   deploy/install.sh --list-packages       print the Debian packages the binary needs at run time, and exit
#
#   --config FILE   the config to put in /etc/hound-speaker/speaker.toml if there is none yet (default: the
#                   documented config/speaker.toml). An existing config is never overwritten.
#   --kiosk         also the screen: Chromium in kiosk mode on the speaker's page (hound-speaker-kiosk.service,
#                   cage and chromium), and the backlight made writable for the speaker's dimming ([screen])
#
# Idempotent: a file already installed and identical is left alone (the last line counts what changed).
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
USER_NAME=hound-speaker
UNIT=hound-speaker.service

# What the binary links (readelf -d: libasound, libcurl, libcrypto, libspeex, libspeexdsp, libsoxr, libsndfile, libgpiod,
# libespeak-ng, libsystemd, libstdc++, libz; the Swift runtime is linked in statically), the voice data
# espeak-ng loads, CA certificates for TLS to Houndify, the time zone database (the speaker tells Houndify its
# zone by name and checks [location] timezone against it), and the tools doctor's advice names (arecord -L,
# gpiodetect).
# Tests/deploy checks this list against the built binary's libraries.
# Debian 13 (Raspberry Pi OS trixie) renamed the libraries of its 64-bit time_t transition (libasound2t64,
# libcurl4t64, libssl3t64) and ships libgpiod 2 (libgpiod3); the binary is built against the release it runs on.
debian_release="$(. /etc/os-release 2>/dev/null; echo "${VERSION_ID:-12}")"
if [ "$debian_release" -ge 13 ] 2>/dev/null; then
    RUNTIME_PACKAGES=(libasound2t64 libcurl4t64 libssl3t64 libgpiod3)
else
    RUNTIME_PACKAGES=(libasound2 libcurl4 libssl3 libgpiod2)
fi
RUNTIME_PACKAGES+=(libspeex1 libspeexdsp1 libsoxr0 libsndfile1 libespeak-ng1 espeak-ng-data
                   libsystemd0 libstdc++6 zlib1g ca-certificates tzdata alsa-utils gpiod)

say() { printf 'install: %s\n' "$*"; }
die() { printf 'install: error: %s\n' "$*" >&2; exit 1; }

ROOT="${DESTDIR:-}"
KIOSK=0
# The screen (--kiosk): the Wayland kiosk compositor, Debian's Chromium, and the page's font.
KIOSK_PACKAGES=(cage chromium fonts-dejavu-core)
KIOSK_USER=hound-speaker-kiosk
KIOSK_UNIT=hound-speaker-kiosk.service
BINARY=""
CONFIG_SRC="$SRC/config/speaker.toml"
while [ $# -gt 0 ]; do
    case "$1" in
        --root) [ $# -ge 2 ] || die "--root needs a directory"; ROOT="$2"; shift 2 ;;
        --root=*) ROOT="${1#--root=}"; shift ;;
        --binary) [ $# -ge 2 ] || die "--binary needs a path"; BINARY="$2"; shift 2 ;;
        --binary=*) BINARY="${1#--binary=}"; shift ;;
        --config) [ $# -ge 2 ] || die "--config needs a file"; CONFIG_SRC="$2"; shift 2 ;;
        --config=*) CONFIG_SRC="${1#--config=}"; shift ;;
        --kiosk) KIOSK=1; shift ;;
        --list-packages) printf '%s\n' "${RUNTIME_PACKAGES[@]}"; exit 0 ;;
        -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument \"$1\" (see --help)" ;;
    esac
done

if [ -n "$ROOT" ]; then
    mkdir -p "$ROOT" || die "cannot create --root directory $ROOT"
    ROOT="$(cd "$ROOT" && pwd)"
    [ "$ROOT" != / ] || die "--root / is the real system: run without --root instead"
    say "installing under $ROOT only (no apt, no users, no systemctl)"
else
    [ "$(id -u)" -eq 0 ] || die "run as root (sudo $0 ...), or use --root DIR to only write a tree"
fi
[ -f "$CONFIG_SRC" ] || die "config $CONFIG_SRC: no such file"

changed=0
note() { say "$*"; changed=$((changed + 1)); }

# --- packages
missing=()
packages=("${RUNTIME_PACKAGES[@]}")
[ "$KIOSK" -eq 0 ] || packages+=("${KIOSK_PACKAGES[@]}")
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ -n "$ROOT" ]; then
        say "would apt-get install ${missing[*]}"
    else
        say "apt-get install ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        changed=$((changed + 1))
    fi
fi

# --- the binary: given, or built here
if [ -z "$BINARY" ]; then
    swift="$(command -v swift || true)"
    # sudo resets PATH: look where the README installs the toolchain too.
    if [ -z "$swift" ] && [ -x /opt/swift/usr/bin/swift ]; then swift=/opt/swift/usr/bin/swift; fi
    [ -n "$swift" ] || die "no --binary and no Swift toolchain (swift on PATH or /opt/swift): build elsewhere and pass --binary PATH (deploy/README.md)"
    [ -f "$SRC/Package.swift" ] || die "no --binary and no source tree at $SRC to build"
    if [ -n "$ROOT" ]; then
        say "would install the build packages (tools/install-deps.sh --build)"
    else
        env "PATH=$(dirname "$swift"):$PATH" bash "$SRC/tools/install-deps.sh" --build
    fi
    say "building in $SRC: deploy/build-release (swift build -c release --static-swift-stdlib ...)"
    build=(env "PATH=$(dirname "$swift"):$PATH" "SWIFT=$swift" bash deploy/build-release)
    # Under sudo, build as the person who asked (with their home for SwiftPM's caches), so their source tree does
    # not fill with root-owned files.
    if [ -z "$ROOT" ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
        home="$(getent passwd "$SUDO_USER" | cut -d: -f6)"
        build=(runuser -u "$SUDO_USER" -- env "HOME=$home" "PATH=$(dirname "$swift"):$PATH"
               "SWIFT=$swift" bash deploy/build-release)
    fi
    (cd "$SRC" && "${build[@]}") || die "the build failed (above)"
    BINARY="$SRC/.build/release/hound-speaker"
fi
[ -f "$BINARY" ] && [ -x "$BINARY" ] || die "binary $BINARY: not an executable file"

# A binary for another architecture would only fail later, in a restart loop, with "Exec format error".
elf_machine() { od -An -tx1 -j18 -N2 "$1" 2>/dev/null | tr -d ' \n'; }
case "$(uname -m)" in
    aarch64) want=b700 ;;
    x86_64) want=3e00 ;;
    armv7l|armv6l) want=2800 ;;
    *) want="" ;;
esac
if [ "$(head -c4 "$BINARY" | od -An -tx1 | tr -d ' \n')" != 7f454c46 ]; then
    die "binary $BINARY: not an ELF executable"
fi
if [ -n "$want" ] && [ "$(elf_machine "$BINARY")" != "$want" ]; then
    die "binary $BINARY is built for another architecture than this $(uname -m) machine (cross-build for aarch64: deploy/README.md)"
fi

# --- user and groups
if [ -n "$ROOT" ]; then
    say "would create the system user $USER_NAME (groups audio, gpio; created if missing)"
else
    for g in audio gpio; do
        getent group "$g" >/dev/null || { groupadd --system "$g"; note "created group $g"; }
    done
    if ! id "$USER_NAME" >/dev/null 2>&1; then
        useradd --system --user-group --home-dir /var/lib/hound-speaker --no-create-home \
                --shell /usr/sbin/nologin --groups audio,gpio "$USER_NAME"
        note "created system user $USER_NAME (groups audio, gpio)"
    else
        for g in audio gpio; do
            id -nG "$USER_NAME" | tr ' ' '\n' | grep -qx "$g" || { usermod -a -G "$g" "$USER_NAME"; note "added $USER_NAME to $g"; }
        done
    fi
fi

if [ "$KIOSK" -eq 1 ]; then
    # The browser runs as a user of its own with the display, GPU and touch screen; the speaker joins video, the
    # group the udev rule gives the backlight to.
    if [ -n "$ROOT" ]; then
        say "would create the system user $KIOSK_USER (groups video, render, input) and add $USER_NAME to video"
    else
        for g in video render input; do
            getent group "$g" >/dev/null || { groupadd --system "$g"; note "created group $g"; }
        done
        if ! id "$KIOSK_USER" >/dev/null 2>&1; then
            useradd --system --user-group --home-dir "/var/lib/$KIOSK_USER" --no-create-home \
                    --shell /usr/sbin/nologin --groups video,render,input "$KIOSK_USER"
            note "created system user $KIOSK_USER (groups video, render, input)"
        fi
        id -nG "$USER_NAME" | tr ' ' '\n' | grep -qx video || { usermod -a -G video "$USER_NAME"; note "added $USER_NAME to video"; }
    fi
fi
# --- files
# put SOURCE DEST MODE: copies only when the content differs, then makes the mode right.
put() {
    local from="$1" to="$ROOT$2" mode="$3"
    if [ -f "$to" ] && cmp -s "$from" "$to"; then
        if [ "$(stat -c %a "$to")" != "${mode#0}" ]; then chmod "$mode" "$to"; note "mode $mode: $2"; fi
        return 0
    fi
    install -D -m "$mode" "$from" "$to"
    note "installed $2"
}

# sync SOURCE_DIR DEST_DIR PATTERN: the installed directory holds exactly the shipped files.
sync_dir() {
    local from="$1" to="$2" pattern="$3" f name
    install -d -m 0755 "$ROOT$to"
    for f in "$from"/$pattern; do
        [ -f "$f" ] || continue
        put "$f" "$to/$(basename "$f")" 0644
    done
    for f in "$ROOT$to"/*; do
        [ -e "$f" ] || continue
        name="$(basename "$f")"
        if [ ! -e "$from/$name" ]; then rm -f "$f"; note "removed $to/$name (no longer shipped)"; fi
    done
}

install -d -m 0755 "$ROOT/usr/local/bin"
put "$BINARY" /usr/local/bin/hound-speaker 0755
# Where the app looks: ConfigLoader.profileDirectories, Earcons.directories (and the hot-phrase model's directory).
sync_dir "$SRC/board" /usr/share/hound-speaker/board '*.toml'
sync_dir "$SRC/share/earcons" /usr/share/hound-speaker/earcons '*.wav'
if [ -d "$SRC/share/kiosk" ]; then
    sync_dir "$SRC/share/kiosk" /usr/share/hound-speaker/kiosk '*.html'
fi
if [ -d "$SRC/share/hotphrase" ]; then
    sync_dir "$SRC/share/hotphrase" /usr/share/hound-speaker/hotphrase '*'
fi

unit_before="$(cat "$ROOT/etc/systemd/system/$UNIT" "$ROOT/etc/systemd/system/$UNIT.d/"*.conf 2>/dev/null || true)"
put "$SRC/deploy/$UNIT" "/etc/systemd/system/$UNIT" 0644
unit_changed=0

# The config holds the client key: private to the service user, and never replaced once there.
install -d -m 0755 "$ROOT/etc/hound-speaker"
config="$ROOT/etc/hound-speaker/speaker.toml"
if [ -e "$config" ]; then
    say "kept the existing /etc/hound-speaker/speaker.toml"
else
    install -m 0600 "$CONFIG_SRC" "$config"
    note "installed /etc/hound-speaker/speaker.toml from $(basename "$CONFIG_SRC") (mode 600): set the credentials and [board] profile in it"
fi
if [ "$(stat -c %a "$config")" != 600 ]; then
    chmod 0600 "$config"
    note "mode 600: /etc/hound-speaker/speaker.toml (it may hold the client key)"
fi
if [ -n "$ROOT" ]; then
    say "would chown $USER_NAME:$USER_NAME /etc/hound-speaker/speaker.toml"
elif [ "$(stat -c %U:%G "$config")" != "$USER_NAME:$USER_NAME" ]; then
    chown "$USER_NAME:$USER_NAME" "$config"
    note "owner $USER_NAME: /etc/hound-speaker/speaker.toml"
fi

if [ "$KIOSK" -eq 1 ]; then
    put "$SRC/deploy/$KIOSK_UNIT" "/etc/systemd/system/$KIOSK_UNIT" 0644
    put "$SRC/deploy/70-hound-speaker-backlight.rules" /etc/udev/rules.d/70-hound-speaker-backlight.rules 0644
    # The speaker's sandbox keeps /sys read-only; the display's backlight (where /sys/class/backlight/NAME really
    # is) is opened for it. A machine without one gets no drop-in, and the page dims its own picture.
    dropin="$(mktemp)"
    for b in "$ROOT"/sys/class/backlight/*; do
        [ -e "$b" ] || continue
        [ -s "$dropin" ] || printf '%s\n' "# Written by install.sh --kiosk: the displays' backlights, which [screen] backlight may name." "[Service]" >"$dropin"
        real="$(readlink -f "$b")"
        printf 'ReadWritePaths=-%s\n' "${real#"$ROOT"}" >>"$dropin"
    done
    if [ -s "$dropin" ]; then
        put "$dropin" "/etc/systemd/system/$UNIT.d/backlight.conf" 0644
    elif [ -e "$ROOT/etc/systemd/system/$UNIT.d/backlight.conf" ]; then
        rm -f "$ROOT/etc/systemd/system/$UNIT.d/backlight.conf"
        note "removed /etc/systemd/system/$UNIT.d/backlight.conf (no backlight now)"
    fi
    rm -f "$dropin"
    [ -n "$ROOT" ] || udevadm trigger --subsystem-match=backlight --action=add 2>/dev/null || true
fi
unit_now="$(cat "$ROOT/etc/systemd/system/$UNIT" "$ROOT/etc/systemd/system/$UNIT.d/"*.conf 2>/dev/null || true)"
[ "$unit_before" = "$unit_now" ] || unit_changed=1

# --- the service
wants="$ROOT/etc/systemd/system/multi-user.target.wants"
if [ -n "$ROOT" ]; then
    # What `systemctl enable` would create.
    if [ "$(readlink "$wants/$UNIT" 2>/dev/null)" != "/etc/systemd/system/$UNIT" ]; then
        install -d -m 0755 "$wants"
        ln -sfn "/etc/systemd/system/$UNIT" "$wants/$UNIT"
        note "enabled $UNIT (multi-user.target.wants)"
    fi
    say "would run: systemctl daemon-reload; systemctl enable --now $UNIT"
    if [ "$KIOSK" -eq 1 ] && [ "$(readlink "$wants/$KIOSK_UNIT" 2>/dev/null)" != "/etc/systemd/system/$KIOSK_UNIT" ]; then
        ln -sfn "/etc/systemd/system/$KIOSK_UNIT" "$wants/$KIOSK_UNIT"
        note "enabled $KIOSK_UNIT (multi-user.target.wants)"
    fi
else
    [ "$unit_changed" -eq 0 ] && [ "$KIOSK" -eq 0 ] || systemctl daemon-reload
    if ! systemctl is-enabled --quiet "$UNIT" 2>/dev/null; then
        systemctl enable --quiet "$UNIT"
        note "enabled $UNIT"
    fi
    if systemctl is-active --quiet "$UNIT" && [ "$changed" -gt 0 ]; then
        systemctl restart "$UNIT"
        say "restarted $UNIT"
    elif ! systemctl is-active --quiet "$UNIT"; then
        systemctl start "$UNIT" || say "$UNIT did not start: journalctl -u hound-speaker -n 20 shows why"
    fi
    if [ "$KIOSK" -eq 1 ]; then
        systemctl is-enabled --quiet "$KIOSK_UNIT" 2>/dev/null || { systemctl enable --quiet "$KIOSK_UNIT"; note "enabled $KIOSK_UNIT"; }
        systemctl is-active --quiet "$KIOSK_UNIT" || systemctl start "$KIOSK_UNIT" ||
            say "$KIOSK_UNIT did not start: journalctl -u $KIOSK_UNIT -n 20 shows why"
    fi
fi

say "done: $changed change(s)"
if [ -z "$ROOT" ]; then
    say "next: sudoedit /etc/hound-speaker/speaker.toml (credentials, [location], [board] profile), then"
    say "      sudo systemctl restart hound-speaker; sudo -u $USER_NAME hound-speaker doctor --config /etc/hound-speaker/speaker.toml"
fi
