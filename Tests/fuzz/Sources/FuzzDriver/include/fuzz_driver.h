#pragma once
#include <stddef.h>
#include <stdint.h>

// libFuzzer's own driver (compiler-rt, linked by -sanitize=fuzzer). Each fuzzer's main.swift calls it, so the
// package's executables keep the main() SwiftPM expects and libFuzzer parses the command line as usual.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
