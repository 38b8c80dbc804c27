import AudioCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Platform

/// Why a take (one recording of the phrase) was not kept (docs/household.md, "A take becomes a template"), in
/// words for the person who said it.
public enum TakeProblem: Error, Equatable, Sendable, CustomStringConvertible {
    /// More than 0.1 % of the samples at full scale.
    case clipped(fraction: Double)
    /// The loudest 10 ms below -40 dBFS.
    case tooQuiet(peakDBFS: Double)
    /// Nothing that stands out of the noise floor, or too little of it for a template.
    case noSpeech
    /// The speech span is longer than 2.5 s.
    case speechTooLong(seconds: Double)
    /// The recording itself is longer than 10 s.
    case recordingTooLong(seconds: Double)
    /// The household already has takes of the phrase and none of them finds this one: z below the threshold.
    case unlikeTheOthers(z: Double, needed: Double)

    public var description: String {
        switch self {
        case .clipped(let fraction):
            "it is clipped (" + String(cFormat: "%.1f", fraction * 100) + " % of the samples at full scale): speak further from the microphone or turn its gain down"
        case .tooQuiet(let dB):
            "it is too quiet (loudest " + String(cFormat: "%.0f", dB) + " dBFS, needs -40): speak closer to the microphone or louder"
        case .noSpeech:
            "no speech found in it: say the phrase clearly, with a moment of quiet around it"
        case .speechTooLong(let seconds):
            "the speech in it lasts " + String(cFormat: "%.1f", seconds) + " s, longer than 2.5 s: say only the phrase, with quiet before and after"
        case .recordingTooLong(let seconds):
            "the recording is " + String(cFormat: "%.1f", seconds) + " s long; a take is at most 10 s"
        case .unlikeTheOthers(let z, let needed):
            "it sounds unlike the other takes (z " + String(cFormat: "%.1f", z) + ", needs " + String(cFormat: "%.1f", needed)
                + "): say the same phrase the same way, or forget the others and start again"
        }
    }
}

/// A take turned into embedding frames: all of them (with the second of silence before and after) and the
/// template, the raw embeddings over the speech.
public struct EnrolledTake: Sendable {
    /// Every embedding frame of the take as the front end sees it from reset.
    public let frames: [[Float]]
    /// The template's raw embeddings (4 to 24 frames).
    public let template: [[Float]]
    /// t_k of each template frame, samples in the take's own time (the second of silence before it not counted).
    public let templateSamples: [Int]
    /// The speech span, seconds in the take.
    public let speech: ClosedRange<Double>
    /// The index in `frames` of the template's last frame (the personal head's positive windows end around it).
    public let templateEnd: Int
}

/// Turning a recording into a template (docs/household.md, "A take becomes a template").
public enum Enrollment {
    static let sampleRate = SpeakerAudio.sampleRate
    static let block = 160  // 10 ms
    static let maxFrames = 24
    static let minFrames = 4

    /// The checks, in the page's order; returns the speech span in seconds.
    public static func check(_ samples: [Int16]) throws(TakeProblem) -> ClosedRange<Double> {
        let seconds = Double(samples.count) / Double(sampleRate)
        guard seconds <= 10 else { throw .recordingTooLong(seconds: seconds) }
        guard samples.count >= block else { throw .noSpeech }
        let clipped = samples.reduce(0) { $0 + (abs(Int($1)) >= 32000 ? 1 : 0) }
        if Double(clipped) > 0.001 * Double(samples.count) { throw .clipped(fraction: Double(clipped) / Double(samples.count)) }
        let blocks = samples.count / block
        var rms = [Double](repeating: 0, count: blocks)
        for b in 0..<blocks {
            var sum = 0.0
            for i in (b * block)..<((b + 1) * block) { sum += Double(samples[i]) * Double(samples[i]) }
            rms[b] = (sum / Double(block)).squareRoot()
        }
        let loudest = rms.max()!, quietest = rms.min()!
        let peak = loudest > 0 ? 20 * log10(loudest / 32768) : -Double.infinity
        guard peak >= -40 else { throw .tooQuiet(peakDBFS: peak) }
        let speech = rms.indices.filter { rms[$0] >= 0.1 * loudest && rms[$0] > 4 * quietest }
        guard let first = speech.first, let last = speech.last else { throw .noSpeech }
        let span = Double(first * block) / Double(sampleRate)...Double((last + 1) * block) / Double(sampleRate)
        guard span.upperBound - span.lowerBound <= 2.5 else { throw .speechTooLong(seconds: span.upperBound - span.lowerBound) }
        return span
    }

    /// Checks `samples` (16 kHz mono) and embeds them with `model`'s front end (format 2 only).
    public static func take(_ samples: [Int16], model: HotPhraseModel) throws -> EnrolledTake {
        guard case .embedding = model.network else { throw needsEmbedding(model) }
        let speech = try check(samples)
        let detector = HotPhraseDetector(model: model)
        var frames: [[Float]] = [], times: [Int] = []
        let silence = [Int16](repeating: 0, count: sampleRate)
        for part in [silence, samples, silence] {
            part.withUnsafeBufferPointer { all in
                detector.process(all, onFrame: { e, sample in
                    frames.append(Array(e))
                    times.append(sample - sampleRate)  // in the take's own time
                }, onDetection: { _ in })
            }
        }
        let rate = Double(sampleRate)
        let chosen = frames.indices.filter {
            Double(times[$0]) / rate >= speech.lowerBound + 0.24 && Double(times[$0]) / rate <= speech.upperBound + 0.40
        }.suffix(maxFrames)
        guard chosen.count >= minFrames else { throw TakeProblem.noSpeech }
        return EnrolledTake(frames: frames, template: chosen.map { frames[$0] }, templateSamples: chosen.map { times[$0] }, speech: speech,
                            templateEnd: chosen.last!)
    }

    /// The error for a model without the speech embedding (format 1).
    public static func needsEmbedding(_ model: HotPhraseModel) -> HouseholdError {
        HouseholdError(file: "hot-phrase model", path: model.path,
                       problem: "is format \(model.format); enrollment needs the speech-embedding model (format 2, made by tools/hotphrase/hotphrase/export_embedding.py): set [hotphrase] model or --model")
    }
}
