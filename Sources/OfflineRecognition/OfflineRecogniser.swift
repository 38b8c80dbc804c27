import Glibc
public import Platform
public import OwnCommands
import Synchronization

/// What the on-device recogniser made of a recording: the words it heard in the speaker's own grammar (empty:
/// nothing in it), and the command they say; `unconfirmed`: the grammar's best words when the check of them
/// (`OfflineRecogniser.recognise`) found they were not said, and so nothing is heard.
public struct OfflineHeard: Sendable, Equatable {
    public var words: String
    public var action: OwnAction?
    public var unconfirmed: String = ""

    public init(words: String, action: OwnAction?, unconfirmed: String = "") {
        self.words = words
        self.action = action
        self.unconfirmed = unconfirmed
    }
}

public struct OfflineRecogniserError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}

/// CMU PocketSphinx with Debian's US English acoustic model and dictionary (pocketsphinx-en-us), searching only the
/// speaker's own commands' grammar (`OwnCommands.jsgf`), then checking the words it found as a key phrase over the
/// same recording. One decoder; a recogniser is used by one thread at a time.
/// @unchecked: the decoder is touched only under `lock`.
public final class OfflineRecogniser: @unchecked Sendable {
    /// Debian's pocketsphinx-en-us.
    public static let defaultModel = "/usr/share/pocketsphinx/model/en-us"

    /// The key-phrase check's threshold: the most lenient PocketSphinx scores (below about 1e-80 nothing changes). What
    /// decides is whether the phrase's path beats the phone loop at all, under the loop's default penalty
    /// (`-kws_plp` 1e-1): BENCHMARKS.md, "Offline commands", has the sweep of both.
    static let confirmThreshold = "1e-80"

    /// Words of the grammar that the dictionary lacks, with their ARPAbet pronunciations.
    static let extraWords = ["unmute": "AH N M Y UW T", "unpause": "AH N P AO Z"]

    private let library: PocketSphinx
    private let decoder: OpaquePointer
    private let config: OpaquePointer
    private let lock = Mutex(())

    /// PocketSphinx's pruning beams (`-beam`, `-wbeam`, `-pbeam`); its defaults unless given.
    public struct Beams: Sendable, Equatable {
        public var beam = 1e-48, word = 7e-29, phone = 1e-48
        public init() {}
        public init(beam: Double, word: Double, phone: Double) { (self.beam, self.word, self.phone) = (beam, word, phone) }
    }

    /// Loads the model from `model` (its `en-us` acoustic model and `cmudict-en-us.dict`) and the grammar; fails
    /// naming the file or the word that is missing. `grammarBeams`: the grammar search's, wider than the defaults
    /// for measuring (BENCHMARKS.md, "Offline commands", session 4); the check keeps the defaults.
    public init(model: String = OfflineRecogniser.defaultModel, grammarBeams: Beams? = nil) throws(OfflineRecogniserError) {
        let library = try PocketSphinx()
        let made = try library.decoder(model: model, arguments: ["-kws_threshold", Self.confirmThreshold],
                                       words: OwnCommands.words.sorted(), pronunciations: Self.extraWords)
        (self.library, self.config, self.decoder) = (library, made.config, made.decoder)
        // A search reads its beams from the configuration when it is made: the grammar's may be wider than the
        // check's, which are PocketSphinx's defaults.
        if let grammarBeams { setBeams(grammarBeams) }
        guard library.setJSGF(decoder, "commands", OwnCommands.jsgf) == 0, library.setSearch(decoder, "commands") == 0 else {
            throw OfflineRecogniserError("PocketSphinx refused the speaker's grammar (OwnCommands.jsgf)")
        }
        if grammarBeams != nil { setBeams(Beams()) }
    }

    deinit {
        _ = library.free(decoder)
        _ = library.freeConfig(config)
    }

    /// Recognises 16 kHz mono `samples` (one utterance, as the question's recording).
    ///
    /// A grammar search always finds its closest command, whatever was said. So the words it found are then looked
    /// for as a key phrase (`ps_set_keyphrase`) over the same recording, where they must beat a loop of all
    /// phones, which can match any speech: a question outside the grammar fails that, a command said passes it.
    public func recognise(_ samples: [Int16]) -> OfflineHeard {
        let (words, confirmed): (String, Bool) = lock.withLock { _ in
            guard library.setSearch(decoder, "commands") == 0 else { return ("", false) }
            let words = decode(samples)
            guard !words.isEmpty else { return ("", false) }
            guard library.setKeyphrase(decoder, "confirm", words) == 0, library.setSearch(decoder, "confirm") == 0 else {
                return (words, false)
            }
            return (words, !decode(samples).isEmpty)
        }
        guard confirmed else { return OfflineHeard(words: "", action: nil, unconfirmed: words) }
        return OfflineHeard(words: words, action: OwnCommands.match(words))
    }

    private func setBeams(_ beams: Beams) {
        for (name, value) in [("-beam", beams.beam), ("-wbeam", beams.word), ("-pbeam", beams.phone)] {
            library.setFloat(config, name, value)
        }
    }

    /// One pass of the current search over `samples`: its hypothesis, empty when none. Called under `lock`.
    private func decode(_ samples: [Int16]) -> String { library.decode(decoder, samples) }
}

extension OfflineRecogniser {
    /// `doctor`'s line for `[speaker] offline_commands`: off, or whether the recogniser loads. Without it the speaker
    /// still answers through Houndify; offline it can only say that it cannot reach the internet.
    public static func diagnostic(enabled: Bool, model: String = defaultModel) -> Diagnostic {
        guard enabled else { return Diagnostic(.info, "offline commands: off ([speaker] offline_commands = false)") }
        do throws(OfflineRecogniserError) {
            _ = try OfflineRecogniser(model: model)
            return Diagnostic(.ok, "offline commands: PocketSphinx and its model (\(model)) load")
        } catch {
            return Diagnostic(.warn, "offline commands: \(error.description); without the internet the speaker can only say so")
        }
    }
}
