import Glibc

/// Audio read from a file and converted to what the speaker works in: 16 kHz, mono, 16-bit.
public struct MonoAudio: Sendable, Equatable {
    public var samples: [Int16]
    public var sampleRate: Int

    public init(samples: [Int16], sampleRate: Int) {
        self.samples = samples
        self.sampleRate = sampleRate
    }

    public var duration: Double { Double(samples.count) / Double(sampleRate) }
}

/// Level of a block of 16-bit samples in dBFS: 0 is full scale, -90 stands for silence.
public enum AudioLevel {
    public static func dBFS<C: Collection>(_ samples: C) -> Double where C.Element == Int16 {
        guard !samples.isEmpty else { return -90 }
        var sum = 0.0
        for s in samples { let x = Double(s) / 32768; sum += x * x }
        let rms = (sum / Double(samples.count)).squareRoot()
        return rms > 0 ? max(-90, 20 * log10(rms)) : -90
    }
}

/// The short sounds for starting and stopping listening, cancel and error, shipped as WAVs in share/earcons (made by tools/make-earcons.sh)
/// and replaceable in config (`[audio] earcons`).
public enum Earcon: String, Sendable, CaseIterable {
    case startListening = "start_listening"
    case stopListening = "stop_listening"
    case cancel
    case error
    /// A timer going off, played again and again until it is stopped.
    case timer
    /// The microphone is switched off (mute) or on again.
    case muteOn = "mute_on"
    case muteOff = "mute_off"
    /// An announcement follows (the control API's `say`): a three-note chime, like a doorbell.
    case announce
}
