#!/usr/bin/env bash
# The Pi's own package (issue #59): deploy/build-deb --arch arm64 cross-builds both programs with Debian's Swift
# (tools/cross-arm64.sh) and packages them in the Debian 13 arm64 root; the package is checked as a file (its
# architecture, dependencies, the binary's machine and stripped size, the same files as the amd64 package), then
# installed with apt into a fresh Debian 13 arm64 system that has never seen the project, where Tests/deb/inside.sh
# runs every check it runs on amd64 (install, --version, say, demo, upgrade, rollback, purge, install.sh), each
# program on the emulated processor (qemu-user). Then Tests/arm64/swift-tests.sh: the Swift tests on arm64.
#   Tests/arm64/run.sh [--amd64 DEB] [--no-swift-tests]
#   --amd64 DEB   the amd64 package of the same commit, whose files the arm64 one must match (Tests/deb makes it)
# Prints a line per check and "N passed, N failed". Needs root (tools/debian-chroot.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
amd64="" swift_tests=1
while [ $# -gt 0 ]; do
    case "$1" in
        --amd64) amd64="$2"; shift 2 ;;
        --no-swift-tests) swift_tests=0; shift ;;
        *) echo "arm64: unknown argument \"$1\"" >&2; exit 2 ;;
    esac
done
. Tests/deb/checks.sh
out="$PWD/out/deb-arm64"  # absolute: apt takes a relative path for a package's name
rm -rf "$out" && mkdir -p "$out"
# 20 MiB: the stripped binary's limit on every architecture (issue #59).
limit=$((20 * 1024 * 1024))

echo "== deploy/build-deb --arch arm64 (the cross build, then the package in the Debian 13 arm64 root)"
start=$SECONDS
new="$(deploy/build-deb --arch arm64 --out "$out" 2> "$out/build.log" | tail -1)"
echo "build-deb --arch arm64: $((SECONDS - start)) s"
check "build-deb --arch arm64 prints the package's path" bash -c "[ -f '$new' ] || { tail -30 $out/build.log; false; }"
[ -f "$new" ] || { finish; exit 1; }
new_local="${new/hound-speaker_/hound-speaker-local_}"
check "both packages are arm64" bash -c "[ \"\$(dpkg-deb -f '$new' Architecture)\" = arm64 ] && [ \"\$(dpkg-deb -f '$new_local' Architecture)\" = arm64 ]"
depends="$(dpkg-deb -f "$new" Depends)"
echo "Depends: $depends"
check "Depends from dpkg-shlibdeps on Debian 13's arm64 libraries (libgpiod3, libasound2t64)" \
    bash -c "grep -q 'libgpiod3' <<< '$depends' && grep -q 'libasound2t64' <<< '$depends' && grep -q 'libc6 (>= ' <<< '$depends'"
check "no Swift runtime package (the stdlib is linked in)" bash -c "! grep -qi swift <<< '$depends'"
check "no PulseAudio or X11 (espeak-ng and libstdc++ linked in, as on amd64)" bash -c "! grep -qiE 'pulse|x11|pcaudio|libstdc' <<< '$depends'"
x="$(mktemp -d)"
dpkg-deb -x "$new" "$x"
bin="$x/usr/bin/hound-speaker"
check "the binary is aarch64" bash -c "[ \"\$(od -An -tx1 -j18 -N2 '$bin' | tr -d ' \n')\" = b700 ]"
check "the binary is stripped" bash -c "! readelf -S '$bin' | grep -q ' .symtab'"
size="$(stat -c %s "$bin")"
echo "the stripped arm64 binary: $size bytes ($(awk -v s="$size" 'BEGIN { printf "%.2f", s / 1048576 }') MiB)"
check "the stripped binary is at most 20 MiB" test "$size" -le "$limit"
rm -rf "$x"
# Read in the unstripped build, whose symbol table names them.
unstripped="$(cat .build-arm64/arm64-bin-path)/hound-speaker"
check "the binary carries neither the local service nor ICU's data" bash -c "! grep -qaE 'icudt[0-9]+_dat|LocalHoundify' '$unstripped'"
if [ -n "$amd64" ]; then
    # The manual page too: help2man ran the arm64 binary in its root.
    listing() { dpkg-deb -c "$1" | awk '{print $1, $6}' | sort; }
    check "the same files at the same paths and modes as the amd64 package" diff <(listing "$amd64") <(listing "$new")
    check "the same maintainer scripts and conffiles" bash -c "
        for f in postinst postrm conffiles; do diff <(dpkg-deb -I '$amd64' \$f) <(dpkg-deb -I '$new' \$f) || exit 1; done"
fi

echo "== a previous release of the same files, for the upgrade and the rollback"
# The same packages under a lower version, repacked here (dpkg-deb under qemu-user compresses for minutes).
revision() {  # revision DEB VERSION: DEB's files and scripts as VERSION (the -local's Depends too), in $out
    local dir old
    dir="$(mktemp -d)" old="$(dpkg-deb -f "$1" Version)"
    dpkg-deb -R "$1" "$dir"
    sed -i "s/${old//./\\.}/$2/g" "$dir/DEBIAN/control"
    dpkg-deb --root-owner-group -b "$dir" "$out/$(dpkg-deb -f "$1" Package)_$2_arm64.deb" > /dev/null
    rm -rf "$dir"
}
revision "$new" 0.0.1+deb0 && revision "$new_local" 0.0.1+deb0
old="$out/hound-speaker_0.0.1+deb0_arm64.deb"
check "the previous release's packages" bash -c "[ \"\$(dpkg-deb -f '$old' Version)\" = 0.0.1+deb0 ] &&
    dpkg-deb -f '${old/hound-speaker_/hound-speaker-local_}' Depends | grep -q 'hound-speaker (= 0.0.1+deb0)'"

echo "== install, run, upgrade, downgrade, remove and purge in a fresh Debian 13 arm64 system (qemu-user)"
start=$SECONDS
bash tools/debian-chroot.sh --suite trixie --arch arm64 --fresh -- bash Tests/deb/inside.sh "$old" "$new" | tee "$out/inside.log" | sed 's/^/    /'
echo "the fresh arm64 system's checks: $((SECONDS - start)) s"
check "every check in the fresh arm64 system passed" bash -c "tail -1 '$out/inside.log' | grep -qE '^[0-9]+ passed, 0 failed$'"

if [ -n "$amd64" ]; then
    echo "== one apt repository with both architectures (deploy/apt-repo): a speaker of each takes its own"
    repo="$out/repo"
    { bash deploy/apt-repo init "$repo" &&
      bash deploy/apt-repo add "$repo" "$amd64" "${amd64/hound-speaker_/hound-speaker-local_}" "$new" "$new_local" --suite trixie &&
      bash deploy/apt-repo sources "$repo" "file://$repo/public" --suite trixie > "$out/hound-speaker.sources"; } > "$out/repo.log" 2>&1
    check "deploy/apt-repo publishes both architectures" bash -c "ls $repo/public/dists/trixie/main/ | grep -q binary-amd64 &&
        ls $repo/public/dists/trixie/main/ | grep -q binary-arm64 || cat $out/repo.log"
    for arch in arm64 amd64; do
        bash tools/debian-chroot.sh --suite trixie --arch "$arch" --fresh -- \
            bash Tests/arm64/inside-repo.sh "$out" "$(dpkg-deb -f "$new" Version)" > "$out/repo-$arch.log" 2>&1
        sed 's/^/    /' "$out/repo-$arch.log" | grep -v "^    debian-chroot"
        check "a fresh $arch Debian 13 installs its own package from the repository" \
            bash -c "tail -1 '$out/repo-$arch.log' | grep -qE '^[0-9]+ passed, 0 failed$'"
    done
fi

if [ "$swift_tests" = 1 ]; then
    echo "== the Swift tests on arm64 (Tests/arm64/swift-tests.sh)"
    check "the Swift tests cross-built and run in the arm64 root" bash -c "bash Tests/arm64/swift-tests.sh > '$out/swift-tests.log' 2>&1"
    grep -E "Test run with|arm64 swift-tests" "$out/swift-tests.log" | sed 's/^/    /'
fi
finish
