# Sourced by the scripts that run inside a Debian chroot for Tests/deb/run.sh: one line per check, and the closing
# "N passed, N failed" line (`finish`).
passed=0 failed=0
check() {  # check "what" COMMAND...: passes when COMMAND succeeds
    local what="$1"; shift
    if "$@" >/tmp/check.out 2>&1; then passed=$((passed + 1)); echo "ok: $what"
    else failed=$((failed + 1)); echo "FAILED: $what"; sed 's/^/    /' /tmp/check.out | tail -15; fi
}
apt() { DEBIAN_FRONTEND=noninteractive apt-get -y -q "$@" > /tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; return 1; }; }
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
