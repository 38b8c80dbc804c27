import Foundation
import JSONKit
import Testing
@testable import Houndify
@testable import LocalHoundify

/// The local service's reading of a voice query body, fed the bytes the client sends.
@Suite struct VoiceQueryStreamTests {
    func body(info: JSONValue, header: [UInt8], audio: [Int16]) -> (Int, [UInt8]) {
        let json = Array(info.asciiJSON().utf8)
        var bytes = json + header
        for s in audio { bytes += [UInt8(truncatingIfNeeded: s), UInt8(truncatingIfNeeded: s >> 8)] }
        return (json.count, bytes)
    }

    @Test func revealsWordsThenSaysSafeToStopAfterTrailingSilence() {
        let audio = TestAudio.voiced(ms: 1000) + TestAudio.silence(ms: 1000)
        let (length, bytes) = body(info: ["LocalServiceTranscript": "turn on the lights"],
                                   header: WAVStreamHeader.bytes(sampleRate: 16000), audio: audio)
        var stream = VoiceQueryStream(requestInfoLength: length, headerRequestInfo: nil, defaultTranscript: "x")
        var partials: [PartialTranscript] = []
        // Fed in odd-sized pieces, as TCP delivers them.
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + 333, bytes.count)
            for case .partial(let p) in stream.feed(Array(bytes[offset..<end])) { partials.append(p) }
            offset = end
        }
        let texts = partials.map(\.partialTranscript)
        #expect(texts.contains("turn on"))
        #expect(texts.last == "turn on the lights")
        let stops = partials.filter(\.safeToStopAudio)
        #expect(stops.count == 1)
        #expect(stops.first?.durationMS ?? 0 >= 1700)  // 1 s of speech + 0.7 s of silence
        #expect(stream.heardTranscript == "turn on the lights")
        #expect(stream.finalPartial.done)
    }

    @Test func unknownAudioFormatIsAnInBandError() {
        let (length, bytes) = body(info: [:], header: Array("ID3\u{3}MP3 data here".utf8), audio: [])
        var stream = VoiceQueryStream(requestInfoLength: length, headerRequestInfo: nil, defaultTranscript: "x")
        let outputs = stream.feed(bytes)
        #expect(outputs.contains(.error("Unable to decode the audio: unrecognized audio format.")))
        #expect(stream.failed)
    }

    @Test func requestInfoInTheHeaderAndSilenceOnly() {
        var stream = VoiceQueryStream(requestInfoLength: nil, headerRequestInfo: ["LocalServiceTranscript": "hello"], defaultTranscript: "x")
        let (_, bytes) = body(info: [:], header: WAVStreamHeader.bytes(sampleRate: 16000), audio: TestAudio.silence(ms: 2000))
        let outputs = stream.feed(Array(bytes.dropFirst(2)))  // no RequestInfo in the body: skip "{}"
        #expect(!outputs.contains { if case .partial(let p) = $0 { return p.safeToStopAudio }; return false })
        #expect(stream.heardTranscript == "")
    }
}
