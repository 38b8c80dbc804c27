import FuzzDriver
import Glibc

// libFuzzer runs fuzzResponse on each input it makes (its options: ./FuzzResponse -help=1).
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzResponse($0, $1) })
