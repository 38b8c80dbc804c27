#!/usr/bin/env bash
# Installs hound-speaker on a Raspberry Pi (Raspberry Pi OS 64-bit: Debian 13 or 12, arm64) as its Debian package,
# with apt, which brings the libraries it needs and the service: the unit enabled and started, the service user,
# the config (a conffile: never overwritten by an upgrade), the state under /var/lib/hound-speaker (deploy/README.md,
# "The Debian package"). Run as root from a source tree, or from the bundle deploy/push sends:
#
#   sudo deploy/install.sh                  build the package here (deploy/build-deb --no-local, with the Swift
#                                           toolchain on the Pi) and install it
#   sudo deploy/install.sh --deb PATH       install a package built elsewhere (deploy/build-deb; sent by deploy/push)
#   sudo deploy/install.sh --binary PATH    make the package from a binary built elsewhere (cross-built), install it
#   deploy/install.sh --root DIR ...        only unpack the package's files under DIR (DESTDIR works too): no apt, no
#                                           users, no systemctl; what would be done on a real system is printed
#
#   --config FILE   the config for /etc/hound-speaker/speaker.toml on a first install (while the package's own is
#                   there unedited; default: the package's, the documented config/speaker.toml). An edited config is
#                   never replaced.
#   --kiosk         also the screen: Chromium in kiosk mode on the speaker's page (hound-speaker-kiosk.service,
#                   cage and chromium), and the backlight made writable for the speaker's dimming ([screen])
#
# Installing the same package again changes nothing (the last line counts what changed); a package rebuilt from a
# changed tree under the same version is reinstalled.
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
USER_NAME=hound-speaker
UNIT=hound-speaker.service
CONFIG=/etc/hound-speaker/speaker.toml

say() { printf 'install: %s\n' "$*"; }
die() { printf 'install: error: %s\n' "$*" >&2; exit 1; }

ROOT="${DESTDIR:-}"
KIOSK=0
# The screen (--kiosk): the Wayland kiosk compositor, Debian's Chromium, and the page's font.
KIOSK_PACKAGES=(cage chromium fonts-dejavu-core)
KIOSK_USER=hound-speaker-kiosk
KIOSK_UNIT=hound-speaker-kiosk.service
BINARY="" DEB="" CONFIG_SRC=""
while [ $# -gt 0 ]; do
    case "$1" in
        --root) [ $# -ge 2 ] || die "--root needs a directory"; ROOT="$2"; shift 2 ;;
        --root=*) ROOT="${1#--root=}"; shift ;;
        --binary) [ $# -ge 2 ] || die "--binary needs a path"; BINARY="$2"; shift 2 ;;
        --binary=*) BINARY="${1#--binary=}"; shift ;;
        --deb) [ $# -ge 2 ] || die "--deb needs a path"; DEB="$2"; shift 2 ;;
        --deb=*) DEB="${1#--deb=}"; shift ;;
        --config) [ $# -ge 2 ] || die "--config needs a file"; CONFIG_SRC="$2"; shift 2 ;;
        --config=*) CONFIG_SRC="${1#--config=}"; shift ;;
        --kiosk) KIOSK=1; shift ;;
        -h|--help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument \"$1\" (see --help)" ;;
    esac
done
[ -z "$BINARY" ] || [ -z "$DEB" ] || die "--binary or --deb, not both"

if [ -n "$ROOT" ]; then
    mkdir -p "$ROOT" || die "cannot create --root directory $ROOT"
    ROOT="$(cd "$ROOT" && pwd)"
    [ "$ROOT" != / ] || die "--root / is the real system: run without --root instead"
    say "installing under $ROOT only (no apt, no users, no systemctl)"
else
    [ "$(id -u)" -eq 0 ] || die "run as root (sudo $0 ...), or use --root DIR to only write a tree"
fi
[ -z "$CONFIG_SRC" ] || [ -f "$CONFIG_SRC" ] || die "config $CONFIG_SRC: no such file"

changed=0
note() { say "$*"; changed=$((changed + 1)); }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# --- the package: given, made from a given binary, or built here
if [ -n "$BINARY" ]; then
    [ -f "$BINARY" ] && [ -x "$BINARY" ] || die "binary $BINARY: not an executable file"
    [ "$(head -c4 "$BINARY" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] || die "binary $BINARY: not an ELF executable"
fi
if [ -z "$DEB" ]; then
    if [ -z "$BINARY" ]; then
        swift="$(command -v swift || true)"
        # sudo resets PATH: look where the README installs the toolchain too.
        if [ -z "$swift" ] && [ -x /opt/swift/usr/bin/swift ]; then swift=/opt/swift/usr/bin/swift; fi
        [ -n "$swift" ] || die "no --deb, no --binary and no Swift toolchain (swift on PATH or /opt/swift): build elsewhere and pass --deb PATH (deploy/README.md)"
        [ -f "$SRC/Package.swift" ] || die "no --deb, no --binary and no source tree at $SRC to build"
    fi
    # The toolchain found above first on PATH, for install-deps' check and for the build.
    tool_path="${swift:+$(dirname "$swift"):}$PATH"
    if [ -n "$ROOT" ]; then
        say "would install the packages building needs (tools/install-deps.sh --package)"
    else
        env "PATH=$tool_path" bash "$SRC/tools/install-deps.sh" --package
    fi
    build=(bash deploy/build-deb --no-local --no-lintian --out "$work")
    [ -z "$BINARY" ] || build+=(--binary "$(cd "$(dirname "$BINARY")" && pwd)/$(basename "$BINARY")")
    [ -n "$BINARY" ] || say "building in $SRC: deploy/build-deb (deploy/build-release, then the package)"
    # Under sudo, build as the person who asked (with their home for SwiftPM's caches), so their source tree does
    # not fill with root-owned files.
    as=(env "PATH=$tool_path" ${swift:+"SWIFT=$swift"})
    if [ -z "$ROOT" ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
        home="$(getent passwd "$SUDO_USER" | cut -d: -f6)"
        chown "$SUDO_USER" "$work"
        as=(runuser -u "$SUDO_USER" -- env "HOME=$home" "PATH=$tool_path" ${swift:+"SWIFT=$swift"})
    fi
    DEB="$(cd "$SRC" && "${as[@]}" "${build[@]}" | tail -1)" || die "the package could not be made (above)"
fi
[ -f "$DEB" ] || die "package $DEB: no such file"
package="$(dpkg-deb -f "$DEB" Package 2>/dev/null)" || die "package $DEB: not a Debian package"
[ "$package" = hound-speaker ] || die "package $DEB is $package, not hound-speaker"
version="$(dpkg-deb -f "$DEB" Version)"
arch="$(dpkg-deb -f "$DEB" Architecture)"
# A package for another architecture would only fail later, in a restart loop, with "Exec format error".
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
    die "package $DEB is for $arch, not this $(dpkg --print-architecture) machine (cross-build for arm64: deploy/README.md)"
fi

# --- install it
if [ -n "$ROOT" ]; then
    # What dpkg would unpack, with what its scripts would do: the config private to the service user, the unit
    # enabled. An edited config stays.
    mkdir -p "$work/tree"
    dpkg-deb -x "$DEB" "$work/tree"
    first=1
    [ ! -e "$ROOT$CONFIG" ] || first=0
    # The unit enabled as `systemctl enable` would.
    unit="$(cd "$work/tree" && find . -path '*/systemd/system/hound-speaker.service' | head -1)"
    wants="$ROOT/etc/systemd/system/multi-user.target.wants"
    install -d -m 0755 "$wants"
    [ "$(readlink "$wants/$UNIT" 2>/dev/null)" = "${unit#.}" ] || ln -sfn "${unit#.}" "$wants/$UNIT"
    # File by file, copying only what differs, so that doing it all again changes nothing, not even a time. An
    # existing config is the owner's.
    files=0
    while IFS= read -r -d '' entry; do
        path="${entry#.}"
        from="$work/tree$path"
        if [ -L "$from" ]; then
            [ "$(readlink "$ROOT$path" 2>/dev/null)" = "$(readlink "$from")" ] || { ln -sfn "$(readlink "$from")" "$ROOT$path"; files=$((files + 1)); }
        elif [ -d "$from" ]; then
            [ -d "$ROOT$path" ] || install -d -m "$(stat -c %a "$from")" "$ROOT$path"
        elif [ "$path" != "$CONFIG" ] || [ "$first" = 1 ]; then
            if ! cmp -s "$from" "$ROOT$path"; then cp -p --no-preserve=ownership "$from" "$ROOT$path"; files=$((files + 1)); fi
            [ "$(stat -c %a "$ROOT$path")" = "$(stat -c %a "$from")" ] || { chmod "$(stat -c %a "$from")" "$ROOT$path"; files=$((files + 1)); }
        fi
    done < <(cd "$work/tree" && find . -mindepth 1 -print0 | sort -z)
    [ "$first" = 0 ] || chmod 0600 "$ROOT$CONFIG"
    [ "$files" -eq 0 ] || note "unpacked hound-speaker $version ($files file(s))"
    say "would run: apt-get install $DEB (the user hound-speaker from sysusers.d, in audio, gpio and spi; the config $USER_NAME's, mode 600; $UNIT enabled and started)"
else
    installed="$(dpkg-query -W -f='${Status} ${Version}' hound-speaker 2>/dev/null || true)"
    reinstall=()
    if [ "$installed" = "install ok installed $version" ]; then
        # The same version again: the same files, unless the tree changed without a commit (build-deb's version
        # names the commit): compare the binary, as dpkg recorded it, with the package's.
        dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/bin/hound-speaker > "$work/binary"
        if cmp -s "$work/binary" /usr/bin/hound-speaker; then
            say "hound-speaker $version is installed already"
        else
            reinstall=(--reinstall)
        fi
    fi
    if [ "$installed" != "install ok installed $version" ] || [ ${#reinstall[@]} -gt 0 ]; then
        say "apt-get install ${reinstall[*]} $DEB"
        cp "$DEB" "$work/hound-speaker.deb"
        chmod 0644 "$work/hound-speaker.deb"; chmod 0755 "$work"  # apt's download user reads local packages
        apt-get update -qq || say "apt-get update failed: installing with the package lists there are"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${reinstall[@]}" "$work/hound-speaker.deb" > "$work/apt.log" 2>&1 \
            || { tail -20 "$work/apt.log" >&2; die "apt-get install failed (above)"; }
        note "installed hound-speaker $version"
    fi
fi

# --- a first install's config
if [ -n "$CONFIG_SRC" ]; then
    shipped="$(dpkg-deb --fsys-tarfile "$DEB" | tar -xO ".$CONFIG" | md5sum | cut -d' ' -f1)"
    if [ -f "$ROOT$CONFIG" ] && cmp -s "$CONFIG_SRC" "$ROOT$CONFIG"; then
        :
    elif [ -f "$ROOT$CONFIG" ] && [ "$(md5sum < "$ROOT$CONFIG" | cut -d' ' -f1)" != "$shipped" ]; then
        say "kept the existing $CONFIG (edited): $(basename "$CONFIG_SRC") is not installed"
    else
        # The package's statoverride makes it the service user's, mode 600; a --root tree has no such user.
        # Written in place: the file keeps its owner, and its directory its time.
        cp --no-preserve=all "$CONFIG_SRC" "$ROOT$CONFIG"
        chmod 0600 "$ROOT$CONFIG"
        [ -n "$ROOT" ] || chown "$USER_NAME:$USER_NAME" "$CONFIG"
        note "installed $CONFIG from $(basename "$CONFIG_SRC") (mode 600)"
    fi
fi

# The config may hold the client key: private to the service user, whatever happened to it since.
if [ -f "$ROOT$CONFIG" ] && [ "$(stat -c %a "$ROOT$CONFIG")" != 600 ]; then
    chmod 0600 "$ROOT$CONFIG"
    note "mode 600: $CONFIG (it may hold the client key)"
fi
if [ -z "$ROOT" ] && [ "$(stat -c %U:%G "$CONFIG")" != "$USER_NAME:$USER_NAME" ]; then
    chown "$USER_NAME:$USER_NAME" "$CONFIG"
    note "owner $USER_NAME: $CONFIG"
fi

# --- the screen
if [ "$KIOSK" -eq 1 ]; then
    missing=()
    for p in "${KIOSK_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        if [ -n "$ROOT" ]; then
            say "would apt-get install ${missing[*]}"
        else
            say "apt-get install ${missing[*]}"
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
            changed=$((changed + 1))
        fi
    fi
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
    unit_before="$(cat "$ROOT/etc/systemd/system/$KIOSK_UNIT" "$ROOT/etc/systemd/system/$UNIT.d/"*.conf 2>/dev/null || true)"
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
    wants="$ROOT/etc/systemd/system/multi-user.target.wants"
    if [ -n "$ROOT" ]; then
        if [ "$(readlink "$wants/$KIOSK_UNIT" 2>/dev/null)" != "/etc/systemd/system/$KIOSK_UNIT" ]; then
            install -d -m 0755 "$wants"
            ln -sfn "/etc/systemd/system/$KIOSK_UNIT" "$wants/$KIOSK_UNIT"
            note "enabled $KIOSK_UNIT (multi-user.target.wants)"
        fi
    else
        unit_now="$(cat "$ROOT/etc/systemd/system/$KIOSK_UNIT" "$ROOT/etc/systemd/system/$UNIT.d/"*.conf 2>/dev/null || true)"
        if [ "$unit_before" != "$unit_now" ]; then
            systemctl daemon-reload
            ! systemctl is-active --quiet "$UNIT" || systemctl restart "$UNIT"
        fi
        systemctl is-enabled --quiet "$KIOSK_UNIT" 2>/dev/null || { systemctl enable --quiet "$KIOSK_UNIT"; note "enabled $KIOSK_UNIT"; }
        systemctl is-active --quiet "$KIOSK_UNIT" || systemctl start "$KIOSK_UNIT" ||
            say "$KIOSK_UNIT did not start: journalctl -u $KIOSK_UNIT -n 20 shows why"
    fi
fi

say "done: $changed change(s)"
if [ -z "$ROOT" ]; then
    say "next: sudoedit $CONFIG (credentials, [location], [board] profile), then"
    say "      sudo systemctl restart hound-speaker; sudo -u $USER_NAME hound-speaker doctor --config $CONFIG"
fi
