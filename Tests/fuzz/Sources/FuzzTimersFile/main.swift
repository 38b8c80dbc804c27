import FuzzDriver
import Glibc

// libFuzzer runs fuzzTimersFile on each input it makes (its options: ./FuzzTimersFile -help=1).
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzTimersFile($0, $1) })
