import Glibc
import Synchronization

/// A phrase looked for as a PocketSphinx key phrase (`ps_set_keyphrase`) in a short recording: heard when the
/// phrase's path beats PocketSphinx's loop of all phones by the threshold somewhere in it. Measured as a second
/// check of the hot phrase's wakes (issue #63; BENCHMARKS.md, "A second check of OK Hound").
/// @unchecked: the decoder is touched only under `lock`.
public final class PhraseSpotter: @unchecked Sendable {
    public let phrase: String
    private let library: PocketSphinx
    private let decoder: OpaquePointer
    private let config: OpaquePointer
    private let lock = Mutex(())

    /// `pronunciations`: words the dictionary lacks, with their ARPAbet phones. `threshold` is PocketSphinx's
    /// `-kws_threshold`, `loopPenalty` its `-kws_plp` (the phone loop's penalty: lower lets the phrase win more).
    public init(phrase: String, pronunciations: [String: String] = [:], threshold: String = "1e-80",
                loopPenalty: String = "1e-1", model: String = OfflineRecogniser.defaultModel) throws(OfflineRecogniserError) {
        let library = try PocketSphinx()
        _ = library.setLog(nil)
        let hmm = "\(model)/en-us", dict = "\(model)/cmudict-en-us.dict"
        for path in [hmm + "/mdef", dict] where access(path, R_OK) != 0 {
            throw OfflineRecogniserError("\(path) is missing (the offline recogniser's model: apt install pocketsphinx-en-us)")
        }
        guard let config = library.configuration(["-hmm", hmm, "-dict", dict, "-samprate", "16000", "-remove_silence", "no",
                                                  "-kws_threshold", threshold, "-kws_plp", loopPenalty]) else {
            throw OfflineRecogniserError("PocketSphinx refused its configuration (\(hmm), -kws_threshold \(threshold), -kws_plp \(loopPenalty))")
        }
        guard let decoder = library.initialise(config) else {
            _ = library.freeConfig(config)
            throw OfflineRecogniserError("PocketSphinx could not load its model from \(hmm)")
        }
        self.library = library
        self.config = config
        self.decoder = decoder
        self.phrase = phrase
        for word in phrase.split(separator: " ").map(String.init) {
            if let found = library.lookupWord(decoder, word) { free(found); continue }
            guard let phones = pronunciations[word] else {
                throw OfflineRecogniserError("the word \"\(word)\" is not in \(dict)")
            }
            _ = library.addWord(decoder, word, phones, 0)
        }
        guard library.setKeyphrase(decoder, "phrase", phrase) == 0, library.setSearch(decoder, "phrase") == 0 else {
            throw OfflineRecogniserError("PocketSphinx refused the key phrase \"\(phrase)\"")
        }
    }

    deinit {
        _ = library.free(decoder)
        _ = library.freeConfig(config)
    }

    /// Whether the phrase is heard in 16 kHz mono `samples`. `whole`: the recording is given at once (PocketSphinx
    /// normalises the cepstra over all of it, rather than as they come).
    public func hears(_ samples: [Int16], whole: Bool = false) -> Bool {
        lock.withLock { _ in
            guard library.startUtt(decoder) == 0 else { return false }
            if whole {
                _ = samples.withUnsafeBufferPointer { library.processRaw(decoder, $0.baseAddress!, $0.count, 0, 1) }
            } else { samples.withUnsafeBufferPointer { buffer in
                var start = 0
                while start < buffer.count {
                    let count = min(2_048, buffer.count - start)
                    _ = library.processRaw(decoder, buffer.baseAddress! + start, count, 0, 0)
                    start += count
                }
            } }
            _ = library.endUtt(decoder)
            var score: Int32 = 0
            return !(library.getHyp(decoder, &score).map { String(cString: $0) } ?? "").isEmpty
        }
    }
}
