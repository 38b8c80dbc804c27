#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer from the Swift toolchain, with AddressSanitizer) of what the speaker reads
# from others: the response stream (FuzzStream), Houndify's JSON (FuzzResponse), the config file (FuzzConfig),
# Houndify's timer and alarm commands as the speaker carries them out (FuzzTimerCommands) and the timers file
# (FuzzTimersFile).
#   Tests/fuzz/run.sh [SECONDS per fuzzer, default 30] [FUZZER...]
# Seeds come from the repository (config/, board/, Tests/HoundifyTests/Fixtures, and Tests/fuzz/seeds: the local
# service's answers to timer and alarm requests, written by seeds/make-timer-command-seeds.py, and timers files as
# the speaker writes them and as older or damaged ones hold them); the corpus grows in .build-fuzz/corpus
# (git-ignored). A crash, a leak or a failed check stops the run: the input is saved as
# .build-fuzz/artifacts/<fuzzer>/crash-* (or leak-*), and the script exits 1 naming it. Replay one with
#   .build-fuzz/debug/FuzzConfig .build-fuzz/artifacts/FuzzConfig/crash-...
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SECONDS_EACH="${1:-30}"
shift || true
FUZZERS=("$@")
[ ${#FUZZERS[@]} -gt 0 ] || FUZZERS=(FuzzStream FuzzResponse FuzzConfig FuzzTimerCommands FuzzTimersFile)
SCRATCH="$REPO/.build-fuzz"

arch="$(uname -m)"
runtime="$(ls /opt/swift/usr/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$arch".a 2>/dev/null | head -1 || true)"
if [ -z "$runtime" ]; then
    runtime="$(ls "$(dirname "$(dirname "$(command -v swift)")")"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$arch".a 2>/dev/null | head -1 || true)"
fi
[ -n "$runtime" ] || { echo "fuzz: libFuzzer (libclang_rt.fuzzer_no_main-$arch.a) is not in this Swift toolchain" >&2; exit 2; }

# -sanitize=fuzzer would also link libFuzzer's main(), which SwiftPM's entry point for an executable clashes with;
# so: the same instrumentation (-sanitize-coverage, as -sanitize=fuzzer sets it), and libFuzzer without its main,
# started by each fuzzer's main.swift.
# (gold warns about every AddressSanitizer helper symbol it cannot export: noise, filtered.)
set +e
(cd "$HERE" && swift build --scratch-path "$SCRATCH" -c debug \
    -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table \
    -Xlinker "$runtime" -Xlinker -lstdc++ 2>&1) | grep -v "Cannot export local symbol" >&2
built=${PIPESTATUS[0]}
set -e
[ "$built" -eq 0 ] || { echo "fuzz: building the fuzzers failed (above)" >&2; exit 2; }
bin="$SCRATCH/debug"

export LSAN_OPTIONS="suppressions=$HERE/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="detect_leaks=1"
# Swift's own crash reporter reads the stack in a way AddressSanitizer reports as an overflow: libFuzzer's report is enough.
export SWIFT_BACKTRACE="enable=no"
status=0
for fuzzer in "${FUZZERS[@]}"; do
    corpus="$SCRATCH/corpus/$fuzzer"
    artifacts="$SCRATCH/artifacts/$fuzzer"
    mkdir -p "$corpus" "$artifacts"
    case "$fuzzer" in
        FuzzConfig) seeds=("$REPO"/config/*.toml "$REPO"/board/*.toml); dict="$HERE/config.dict" ;;
        FuzzTimerCommands|FuzzTimersFile) seeds=("$HERE"/seeds/"$fuzzer"/*.json); dict="$HERE/timers.dict" ;;
        *) seeds=("$REPO"/Tests/HoundifyTests/Fixtures/*.json); dict="$HERE/stream.dict" ;;
    esac
    cp -n "${seeds[@]}" "$corpus/" 2>/dev/null || true
    log="$SCRATCH/$fuzzer.log"
    # Run from the repository: a config naming [board] profile reads ./board, as the speaker does.
    if (cd "$REPO" && "$bin/$fuzzer" -max_total_time="$SECONDS_EACH" -dict="$dict" -max_len=4096 -timeout=10 \
            -rss_limit_mb=2048 -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" >"$log" 2>&1); then
        runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
        cov="$(grep -o 'DONE *cov: *[0-9]* *ft: *[0-9]*' "$log" | tail -1 | sed 's/DONE *//' || true)"
        echo "fuzz: $fuzzer: ${SECONDS_EACH} s, $runs inputs, ${cov:-cov ?}, corpus $(ls "$corpus" | wc -l) files, no crash"
    else
        status=1
        echo "fuzz: $fuzzer FAILED (log: $log):" >&2
        grep -E "ERROR|Fatal error|SUMMARY|Test unit written|fatalError" "$log" | head -8 >&2
    fi
done
exit $status
