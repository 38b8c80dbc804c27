import FuzzDriver
import Glibc

// libFuzzer runs fuzzConfig on each input it makes (its options: ./FuzzConfig -help=1).
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzConfig($0, $1) })
