import FuzzDriver
import Glibc

// libFuzzer runs fuzzTimerCommands on each input it makes (its options: ./FuzzTimerCommands -help=1).
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzTimerCommands($0, $1) })
