import Glibc
import Synchronization

/// A phrase looked for as a PocketSphinx key phrase (`ps_set_keyphrase`) in a short recording: heard when the
/// phrase's path beats PocketSphinx's loop of all phones by the threshold somewhere in it. Measured as a second
/// check of the hot phrase's wakes (issue #63; BENCHMARKS.md, "Offline commands", session 4).
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
        let made = try library.decoder(model: model, arguments: ["-kws_threshold", threshold, "-kws_plp", loopPenalty],
                                       words: phrase.split(separator: " ").map(String.init), pronunciations: pronunciations)
        (self.library, self.config, self.decoder, self.phrase) = (library, made.config, made.decoder, phrase)
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
        lock.withLock { _ in !library.decode(decoder, samples, whole: whole).isEmpty }
    }
}
