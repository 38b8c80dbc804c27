/// The speaker's one audio rate, 16 kHz mono: what the microphone's audio is converted to, and what the endpointer,
/// the hot-phrase detector, the echo canceller, an enrollment's takes, the voice search's upload and the tests' and
/// benches' recordings all work in.
public enum SpeakerAudio {
    public static let sampleRate = 16_000
    /// Samples in one millisecond.
    public static let samplesPerMS = sampleRate / 1000
}
