import FuzzDriver
import Glibc

// libFuzzer runs fuzzStream on each input it makes (its options: ./FuzzStream -help=1).
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzStream($0, $1) })
