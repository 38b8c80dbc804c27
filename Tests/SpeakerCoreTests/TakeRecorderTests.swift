import Foundation
import Testing
@testable import SpeakerCore

/// One take of the enrollment phrase cut from the microphone's frames (20 ms each here): from just before speech to
/// just after it, never the tail of something already being said when the recording started.
@Suite struct TakeRecorderTests {
    static let frame = 320

    /// `ms` of a 1 kHz tone at a speech-like level (`loud`), or of faint noise.
    func audio(_ ms: Int, loud: Bool) -> [Int16] {
        var seed: UInt32 = 7
        return (0..<(ms * 16)).map { i in
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let noise = Double(Int(seed >> 16) % 21 - 10)
            guard loud else { return Int16(noise) }
            let phase: Double = 2 * Double.pi * 1000 * Double(i) / 16_000
            return Int16(3000 * sin(phase) + noise)
        }
    }

    /// Feeds `samples` frame by frame; the take and the sample count fed when it came.
    func feed(_ recorder: inout TakeRecorder, _ samples: [Int16]) -> (take: [Int16], at: Int)? {
        var at = 0
        while at + Self.frame <= samples.count {
            let take = samples[at..<(at + Self.frame)].withUnsafeBufferPointer { recorder.process($0) }
            at += Self.frame
            if let take { return (take, at) }
        }
        return nil
    }

    @Test func aTakeRunsFromJustBeforeTheSpeechToJustAfterIt() throws {
        var recorder = TakeRecorder()
        // 1 s of speech under way as it starts (the prompt's echo, a word before), 1 s of quiet, the take (0.8 s),
        // then quiet.
        let stream = audio(1000, loud: true) + audio(1000, loud: false) + audio(800, loud: true) + audio(2000, loud: false)
        let (take, at) = try #require(feed(&recorder, stream))
        // Half a second before the take's speech, the speech, 0.6 s after (the detector's band filters ring on
        // for a frame or two after the tone stops).
        let shortest = (500 + 800 + 600) * 16, longest = shortest + 40 * 16
        #expect(take.count >= shortest && take.count <= longest, "\(take.count)")
        let started = (1000 + 1000 - 500) * 16  // named: Swift 6.2's type checker gives up on it inside #expect
        #expect(at - take.count == started)
        #expect(take.prefix(500 * 16).allSatisfy { abs(Int($0)) <= 10 })
        #expect(take[(500 * 16)..<(1300 * 16)].contains { abs(Int($0)) > 1000 })
        // Done: nothing more is taken.
        #expect(feed(&recorder, audio(3000, loud: true) + audio(1000, loud: false))?.at == nil)
    }

    @Test func speechGoingOnAtTheStartIsNotATake() {
        var recorder = TakeRecorder()
        // Speech from the first frame to the end of the wait: never a quiet moment, so never a take of it; after
        // the wait the last second heard is handed over, for the checks to refuse (too long, or no speech).
        let long = audio(9000, loud: true)
        let result = feed(&recorder, long)
        #expect(result?.at == 8000 * 16)
        #expect(result?.take.count == 1000 * 16)
    }

    @Test func nothingSaidEndsAfterTheWaitWithTheLastSecond() {
        var recorder = TakeRecorder()
        let result = feed(&recorder, audio(10_000, loud: false))
        #expect(result?.at == 8000 * 16)
        #expect(result?.take.count == 1000 * 16)
        #expect(result?.take.allSatisfy { abs(Int($0)) <= 10 } == true)
    }

    @Test func speechTooLongEndsTheTakeAtTheLongest() throws {
        var recorder = TakeRecorder()
        let (take, _) = try #require(feed(&recorder, audio(500, loud: false) + audio(6000, loud: true)))
        #expect(take.count == (500 + 4000) * 16)
    }
}
