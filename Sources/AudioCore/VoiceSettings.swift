// The drivers' settings, here in the pure half so that the config reader (Sources/SpeakerConfig) and the core
// name them without linking ALSA, speexdsp, espeak-ng or OpenSSL.

/// espeak-ng's voice settings (`[speech]` in config).
public struct VoiceSettings: Sendable, Equatable {
    /// An espeak-ng voice name (`espeak-ng --voices`), e.g. "en-us", "en-gb", "en-us+f3".
    public var voice = "en-us"
    /// Words per minute, 80 to 450.
    public var rate = 175
    /// 0 to 100.
    public var pitch = 50
    /// 0 to 200 (100 is normal).
    public var volume = 100
    /// Silence played before the first word, so a device waking from idle does not clip it.
    public var leadInMS = 150
    public init() {}
}
