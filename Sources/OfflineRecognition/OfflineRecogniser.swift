import Glibc
public import OwnCommands
import Synchronization

/// What the on-device recogniser made of a recording: the words it heard in the speaker's own grammar (empty:
/// nothing in it), and the command they say.
public struct OfflineHeard: Sendable, Equatable {
    public var words: String
    public var action: OwnAction?
    /// Measurements towards telling a command from other speech forced into the grammar (not yet used to decide;
    /// BENCHMARKS.md, "Offline commands"): the words' acoustic score per 10 ms frame (PocketSphinx's units, each
    /// frame's best senone 0), and the seconds of speech, about as loud as the words, that no word took. nil when
    /// nothing was heard.
    public var confidence: Double?
    public var unexplained: Double?
}

public struct OfflineRecogniserError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}

/// CMU PocketSphinx with Debian's US English acoustic model and dictionary (pocketsphinx-en-us), searching only the
/// speaker's own commands' grammar (`OwnCommands.jsgf`). One decoder; a recogniser is used by one thread at a time.
/// @unchecked: the decoder is touched only under `lock`.
public final class OfflineRecogniser: @unchecked Sendable {
    /// Debian's pocketsphinx-en-us.
    public static let defaultModel = "/usr/share/pocketsphinx/model/en-us"

    /// Words of the grammar that the dictionary lacks, with their ARPAbet pronunciations.
    static let extraWords = ["unmute": "AH N M Y UW T", "unpause": "AH N P AO Z"]

    private let library: PocketSphinx
    private let decoder: OpaquePointer
    private let config: OpaquePointer
    private let lock = Mutex(())

    /// Loads the model from `model` (its `en-us` acoustic model and `cmudict-en-us.dict`) and the grammar; fails
    /// naming the file or the word that is missing.
    public init(model: String = OfflineRecogniser.defaultModel) throws(OfflineRecogniserError) {
        let library = try PocketSphinx()
        // No log file: one opened with -logfn would be a descriptor every child process inherits.
        _ = library.setLog(nil)
        let hmm = "\(model)/en-us", dict = "\(model)/cmudict-en-us.dict"
        for path in [hmm + "/mdef", dict] where access(path, R_OK) != 0 {
            throw OfflineRecogniserError("\(path) is missing (the offline recogniser's model: apt install pocketsphinx-en-us)")
        }
        // All frames decoded (no silence removal): the words' frames then count from the recording's start.
        guard let config = library.configuration(["-hmm", hmm, "-dict", dict, "-samprate", "16000", "-remove_silence", "no"]) else {
            throw OfflineRecogniserError("PocketSphinx refused its configuration (\(hmm))")
        }
        guard let decoder = library.initialise(config) else {
            _ = library.freeConfig(config)
            throw OfflineRecogniserError("PocketSphinx could not load its model from \(hmm)")
        }
        self.library = library
        self.config = config
        self.decoder = decoder
        for word in OwnCommands.words.sorted() {
            if let found = library.lookupWord(decoder, word) { free(found); continue }
            guard let phones = Self.extraWords[word] else {
                throw OfflineRecogniserError("the word \"\(word)\" of the speaker's grammar is not in \(dict)")
            }
            _ = library.addWord(decoder, word, phones, 0)
        }
        guard library.setJSGF(decoder, "commands", OwnCommands.jsgf) == 0, library.setSearch(decoder, "commands") == 0 else {
            throw OfflineRecogniserError("PocketSphinx refused the speaker's grammar (OwnCommands.jsgf)")
        }
    }

    deinit {
        _ = library.free(decoder)
        _ = library.freeConfig(config)
    }

    /// Recognises 16 kHz mono `samples` (one utterance, as the question's recording).
    public func recognise(_ samples: [Int16]) -> OfflineHeard {
        lock.withLock { _ in
            guard let heard = decode(samples), !heard.words.isEmpty else { return OfflineHeard(words: "", action: nil) }
            let unexplained = Self.unexplainedSpeech(samples, wordFrames: heard.wordFrames)
            let fit = Double(heard.acoustic) / Double(max(1, heard.wordFrames.count { $0 }))
            return OfflineHeard(words: heard.words, action: OwnCommands.match(heard.words), confidence: fit, unexplained: unexplained)
        }
    }

    /// Seconds of speech the grammar's words did not take: frames outside every word that are about as loud as the
    /// words' own (within 12 dB of their median). Speech that is none of the commands is forced into a few command
    /// words and the silence model takes the rest, loud as it is.
    static func unexplainedSpeech(_ samples: [Int16], wordFrames: [Bool]) -> Double {
        let count = min(samples.count / 160, wordFrames.count)
        guard count > 0 else { return 0 }
        var level = [Double](repeating: 0, count: count)
        for f in 0..<count {
            var sum = 0.0
            for i in f * 160..<(f + 1) * 160 { sum += Double(samples[i]) * Double(samples[i]) }
            level[f] = 10 * log10(sum / 160 + 1)
        }
        let inWords = (0..<count).filter { wordFrames[$0] }.map { level[$0] }.sorted()
        guard !inWords.isEmpty else { return 0 }
        let floor = inWords[inWords.count / 2] - 12
        let outside = (0..<count).filter { !wordFrames[$0] && level[$0] >= floor }.count
        return Double(outside) / 100
    }

    /// One pass over the samples: the words, and which 10 ms frames the grammar's words took. Under `lock`.
    private func decode(_ samples: [Int16]) -> (words: String, wordFrames: [Bool], acoustic: Int)? {
        guard library.startUtt(decoder) == 0 else { return nil }
        // In blocks, as the microphone gives them: the cepstral mean follows the audio as it comes.
        samples.withUnsafeBufferPointer { buffer in
            var start = 0
            while start < buffer.count {
                let count = min(2_048, buffer.count - start)
                _ = library.processRaw(decoder, buffer.baseAddress! + start, count, 0, 0)
                start += count
            }
        }
        _ = library.endUtt(decoder)
        var score: Int32 = 0
        guard let hyp = library.getHyp(decoder, &score) else { return ("", [], 0) }
        var acoustic = 0
        var frames = [Bool](repeating: false, count: samples.count / 160 + 1)
        var segment = library.segments(decoder)
        while let s = segment {
            var first: Int32 = 0, last: Int32 = 0
            library.segmentFrames(s, &first, &last)
            let word = library.segmentWord(s).map { String(cString: $0) } ?? ""
            if !word.hasPrefix("<"), !word.hasPrefix("["), !word.hasPrefix("("), first >= 0, first <= last {
                for f in Int(first)...Int(last) where f < frames.count { frames[f] = true }
                var ascr: Int32 = 0, lscr: Int32 = 0, lback: Int32 = 0
                _ = library.segmentScore(s, &ascr, &lscr, &lback)
                acoustic += Int(ascr)
            }
            segment = library.nextSegment(s)
        }
        return (String(cString: hyp), frames, acoustic)
    }
}
