import Glibc

/// libpocketsphinx (with the libsphinxbase it brings), opened with dlopen when the recogniser is made and closed
/// with it. Linked in, its libsphinxad would map PulseAudio's client libraries into the speaker for nothing, and
/// a speaker that has the internet never needs the recogniser (issue #63: "loaded only when needed").
/// Only pointers cross: every PocketSphinx type is opaque here.
final class PocketSphinx: Sendable {
    /// The soname of Debian's libpocketsphinx3.
    static let soname = "libpocketsphinx.so.3"

    typealias Args = @convention(c) () -> OpaquePointer?
    typealias ParseArgs = @convention(c) (OpaquePointer?, OpaquePointer?, Int32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, Int32) -> OpaquePointer?
    typealias FreeConfig = @convention(c) (OpaquePointer?) -> Int32
    typealias SetFloat = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Double) -> Void
    typealias SetLog = @convention(c) (UnsafeMutablePointer<FILE>?) -> UnsafeMutablePointer<FILE>?
    typealias Init = @convention(c) (OpaquePointer?) -> OpaquePointer?
    typealias Free = @convention(c) (OpaquePointer?) -> Int32
    typealias LookupWord = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>?
    typealias AddWord = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int32) -> Int32
    typealias SetJSGF = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    typealias SetSearch = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    typealias StartUtt = @convention(c) (OpaquePointer?) -> Int32
    typealias ProcessRaw = @convention(c) (OpaquePointer?, UnsafePointer<Int16>?, Int, Int32, Int32) -> Int32
    typealias GetHyp = @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?) -> UnsafePointer<CChar>?

    nonisolated(unsafe) private let handle: UnsafeMutableRawPointer
    let args: Args, parseArgs: ParseArgs, freeConfig: FreeConfig, setFloat: SetFloat, setLog: SetLog, initialise: Init, free: Free
    let lookupWord: LookupWord, addWord: AddWord, setJSGF: SetJSGF, setKeyphrase: SetJSGF, setSearch: SetSearch
    let startUtt: StartUtt, processRaw: ProcessRaw, endUtt: StartUtt, getHyp: GetHyp

    /// Loads `library` and looks up what the recogniser uses; an error names the library and what the loader said.
    init(library: String = PocketSphinx.soname) throws(OfflineRecogniserError) {
        guard let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) else {
            throw OfflineRecogniserError("cannot load \(library) (the offline recogniser: apt install libpocketsphinx3): \(Self.loaderError())")
        }
        func symbol<F>(_ name: String, as _: F.Type) -> F? { dlsym(handle, name).map { unsafeBitCast($0, to: F.self) } }
        guard let args = symbol("ps_args", as: Args.self), let parseArgs = symbol("cmd_ln_parse_r", as: ParseArgs.self),
              let freeConfig = symbol("cmd_ln_free_r", as: FreeConfig.self),
              let setFloat = symbol("cmd_ln_set_float_r", as: SetFloat.self), let setLog = symbol("err_set_logfp", as: SetLog.self),
              let initialise = symbol("ps_init", as: Init.self), let free = symbol("ps_free", as: Free.self),
              let lookupWord = symbol("ps_lookup_word", as: LookupWord.self), let addWord = symbol("ps_add_word", as: AddWord.self),
              let setJSGF = symbol("ps_set_jsgf_string", as: SetJSGF.self),
              let setKeyphrase = symbol("ps_set_keyphrase", as: SetJSGF.self), let setSearch = symbol("ps_set_search", as: SetSearch.self),
              let startUtt = symbol("ps_start_utt", as: StartUtt.self), let processRaw = symbol("ps_process_raw", as: ProcessRaw.self),
              let endUtt = symbol("ps_end_utt", as: StartUtt.self), let getHyp = symbol("ps_get_hyp", as: GetHyp.self) else {
            let reason = Self.loaderError()
            dlclose(handle)
            throw OfflineRecogniserError("\(library) lacks a function the recogniser uses: \(reason)")
        }
        self.handle = handle
        (self.args, self.parseArgs, self.freeConfig, self.setFloat) = (args, parseArgs, freeConfig, setFloat)
        (self.setLog, self.initialise, self.free) = (setLog, initialise, free)
        (self.lookupWord, self.addWord, self.setJSGF, self.setKeyphrase, self.setSearch) = (lookupWord, addWord, setJSGF, setKeyphrase, setSearch)
        (self.startUtt, self.processRaw, self.endUtt, self.getHyp) = (startUtt, processRaw, endUtt, getHyp)
    }

    deinit { dlclose(handle) }

    /// The decoder's configuration from command-line style arguments (`-hmm DIR -dict FILE ...`).
    func configuration(_ arguments: [String]) -> OpaquePointer? {
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        defer { for p in argv { Glibc.free(p) } }
        return argv.withUnsafeMutableBufferPointer { buffer in
            parseArgs(nil, args(), Int32(arguments.count), buffer.baseAddress, 1)
        }
    }

    private static func loaderError() -> String { dlerror().map { String(cString: $0) } ?? "unknown error" }
}
