// The drivers' settings, here in the pure half so that the config reader (Sources/SpeakerConfig) and the core
// name them without linking ALSA, speexdsp, espeak-ng or OpenSSL.

/// How the speaker listens for its hot phrase (`[hotphrase]` in config/speaker.toml).
public struct HotPhraseSettings: Sendable, Equatable {
    /// Listen for the hot phrase at all (false: the button only, and the microphone is opened per query).
    public var enabled = true
    /// Model file; "" looks for ok-hound.hpm in /etc/hound-speaker/hotphrase, then the shipped one beside the
    /// executable (share/hotphrase in the source tree) or in /usr/share/hound-speaker/hotphrase.
    public var model = ""
    /// 0 to 1: 0.5 is the model's own threshold (the shipped model's: 0.5 false accepts an hour on its
    /// evaluation's negatives, BENCHMARKS.md); higher hears more.
    public var sensitivity = 0.5
    /// Deaf time after a detection, so one "OK Hound" wakes the speaker once.
    public var refractoryMS = 2000
    /// The sensitivity while the speaker talks or rings, over the echo-cancelled audio (`[audio] echo_cancel`): what
    /// is left of its own voice must not wake it, and a person talking over it is often heard less well.
    public var bargeInSensitivity = 0.4
    /// The folder of the household's enrolled voices (household.json, docs/household.md); "" is the state
    /// directory (ConfigLoader fills it in).
    public var household = ""
    /// Whether a wake whose question was answered, and which the household's templates heard themselves, is kept
    /// as a learned template (the newest four per phrase; docs/household.md, "Answered wakes").
    public var learnFromAnswers = true
    /// Whether "stop" said by anyone stops a ring or an answer (the shipped stop word, `stop.hpm`, heard over the
    /// echo-cancelled microphone while the speaker rings or speaks); false: only the household's enrolled stop
    /// phrase and the button do.
    public var stopWord = true

    /// Each value not given keeps its default (written once, above).
    public init(enabled: Bool? = nil, model: String? = nil, sensitivity: Double? = nil, refractoryMS: Int? = nil) {
        if let enabled { self.enabled = enabled }
        if let model { self.model = model }
        if let sensitivity { self.sensitivity = sensitivity }
        if let refractoryMS { self.refractoryMS = refractoryMS }
    }

    public var refractorySeconds: Double { Double(refractoryMS) / 1000 }
}

/// The words of a wake phrase as the household keeps and shows them: a person's words, so no control characters
/// (a NUL, an escape, a line break) and no format characters (the bidirectional overrides and isolates, which make a
/// name read as another on the screen and in the log), and at most 100 characters.
public enum PhraseText {
    public static let longest = 100

    /// Why `text` is not a phrase's words (nil: it is).
    public static func problem(_ text: String) -> String? {
        if text.allSatisfy(\.isWhitespace) { return "is empty" }
        if text.count > longest { return "is longer than \(longest) characters: a wake phrase is a few words" }
        if let odd = text.unicodeScalars.first(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }) {
            return "holds the character U+\(String(odd.value, radix: 16, uppercase: true)), which is not a word's (a control or formatting character)"
        }
        return nil
    }
}
