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

extension PocketSphinx {
    /// A decoder over `model`'s US English acoustic model (`en-us`) and dictionary, with `arguments` besides, all
    /// frames decoded (the recording is already cut by the speaker's endpointer), and `words` the dictionary lacks
    /// added from `pronunciations`. Fails naming the file or the word that is missing.
    func decoder(model: String, arguments: [String], words: [String], pronunciations: [String: String])
        throws(OfflineRecogniserError) -> (config: OpaquePointer, decoder: OpaquePointer) {
        // No log file: one opened with -logfn would be a descriptor every child process inherits.
        _ = setLog(nil)
        let hmm = "\(model)/en-us", dict = "\(model)/cmudict-en-us.dict"
        for path in [hmm + "/mdef", dict] where access(path, R_OK) != 0 {
            throw OfflineRecogniserError("\(path) is missing (the offline recogniser's model: apt install pocketsphinx-en-us)")
        }
        guard let config = configuration(["-hmm", hmm, "-dict", dict, "-samprate", "16000", "-remove_silence", "no"] + arguments) else {
            throw OfflineRecogniserError("PocketSphinx refused its configuration (\(hmm), \(arguments.joined(separator: " ")))")
        }
        guard let decoder = initialise(config) else {
            _ = freeConfig(config)
            throw OfflineRecogniserError("PocketSphinx could not load its model from \(hmm)")
        }
        for word in words {
            if let found = lookupWord(decoder, word) { Glibc.free(found); continue }
            guard let phones = pronunciations[word] else {
                _ = free(decoder)
                _ = freeConfig(config)
                throw OfflineRecogniserError("the word \"\(word)\" is not in \(dict)")
            }
            _ = addWord(decoder, word, phones, 0)
        }
        return (config, decoder)
    }

    /// One pass of the decoder's current search over `samples`: its hypothesis, empty when none. In blocks, as the
    /// microphone gives them (the cepstral mean follows the audio as it comes), or `whole` at once (its mean over
    /// all of it).
    func decode(_ decoder: OpaquePointer, _ samples: [Int16], whole: Bool = false) -> String {
        guard startUtt(decoder) == 0, !samples.isEmpty else { return "" }
        samples.withUnsafeBufferPointer { buffer in
            var start = 0
            while start < buffer.count {
                let count = whole ? buffer.count : min(2_048, buffer.count - start)
                _ = processRaw(decoder, buffer.baseAddress! + start, count, 0, whole ? 1 : 0)
                start += count
            }
        }
        _ = endUtt(decoder)
        var score: Int32 = 0
        return getHyp(decoder, &score).map { String(cString: $0) } ?? ""
    }
}
