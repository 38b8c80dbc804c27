import FoundationEssentials
public import JSONKit
import AudioCore
import Glibc
public import Houndify
import Audio

/// Follows a voice query's request body as it arrives (docs/houndify-protocol.md, "Voice request body"):
/// RequestInfo, the audio header (WAV or Speex), then audio. It measures the audio in 10 ms frames and decides
/// what the service says: partial transcripts revealing the given transcript word by word as voiced audio comes
/// in, and `SafeToStopAudio` once enough trailing silence follows speech. It does not recognise speech.
public struct VoiceQueryStream {
    public enum Output: Equatable {
        case requestInfo([String: JSONValue])
        case partial(PartialTranscript)
        case error(String)
    }

    public struct Settings: Sendable {
        /// A 10 ms frame louder than this is voiced.
        public var voicedThresholdDBFS = -45.0
        /// Voiced audio that reveals one more word of the transcript.
        public var msPerWord = 200
        /// Silence after speech that makes the service say SafeToStopAudio.
        public var trailingSilenceMS = 700
        public init() {}
    }

    enum Phase { case requestInfo(length: Int), audioHeader, wav(headerSeen: [UInt8]), pcm, speex, failed }

    let settings: Settings
    let defaultTranscript: String
    private(set) var transcript: String = ""
    private var phase: Phase
    private var pending: [UInt8] = []
    private var speex: SpeexStreamDecoder?
    private var frame: [Int16] = []
    private var frameSamples = 160
    private(set) var audioMS = 0
    private(set) var voicedMS = 0
    private var silenceAfterSpeechMS = 0
    private var wordsShown = -1
    private(set) var saidSafeToStop = false

    /// `requestInfoLength` is `Hound-Request-Info-Length`, or nil when RequestInfo came in the header.
    public init(requestInfoLength: Int?, headerRequestInfo: [String: JSONValue]?, defaultTranscript: String,
                settings: Settings = Settings()) {
        self.settings = settings
        self.defaultTranscript = defaultTranscript
        if let length = requestInfoLength {
            phase = .requestInfo(length: length)
        } else {
            phase = .audioHeader
            transcript = Self.transcript(from: headerRequestInfo ?? [:], default: defaultTranscript)
        }
    }

    static func transcript(from info: [String: JSONValue], default fallback: String) -> String {
        info["LocalServiceTranscript"]?.stringValue ?? fallback
    }

    public var words: [Substring] { transcript.split(separator: " ") }

    public mutating func feed(_ bytes: [UInt8]) -> [Output] {
        pending.append(contentsOf: bytes)
        var out: [Output] = []
        var progressed = true
        while progressed {
            progressed = false
            switch phase {
            case .failed:
                pending.removeAll()
            case .requestInfo(let length):
                guard pending.count >= length else { break }
                let json = Data(pending.prefix(length))
                pending.removeFirst(length)
                guard let info = (try? JSONValue(parsing: json))?.objectValue else {
                    phase = .failed
                    out.append(.error("RequestInfo is not a JSON object"))
                    break
                }
                transcript = Self.transcript(from: info, default: defaultTranscript)
                out.append(.requestInfo(info))
                phase = .audioHeader
                progressed = true
            case .audioHeader:
                guard pending.count >= 12 else { break }
                if pending.starts(with: Array("RIFF".utf8)) && Array(pending[8..<12]) == Array("WAVE".utf8) {
                    phase = .wav(headerSeen: [])
                    progressed = true
                } else if pending.starts(with: Array("Speex   ".utf8)) {
                    guard pending.count >= 80 else { break }
                    guard let decoder = SpeexStreamDecoder(header: Array(pending.prefix(80))) else {
                        phase = .failed
                        out.append(.error("Unable to decode the audio: bad Speex header."))
                        break
                    }
                    speex = decoder
                    frameSamples = decoder.sampleRate / 100
                    pending.removeFirst(80)
                    phase = .speex
                    progressed = true
                } else {
                    phase = .failed
                    out.append(.error("Unable to decode the audio: unrecognized audio format."))
                }
            case .wav:
                // Walk the RIFF chunks to "data" (a real WAV file may carry LIST chunks first).
                var offset = 12
                var found: Int? = nil
                var rate = SpeakerAudio.sampleRate
                while offset + 8 <= pending.count {
                    let id = String(decoding: pending[offset..<offset + 4], as: UTF8.self)
                    let size = Int(UInt32(pending[offset + 4]) | UInt32(pending[offset + 5]) << 8 | UInt32(pending[offset + 6]) << 16 | UInt32(pending[offset + 7]) << 24)
                    if id == "data" { found = offset + 8; break }
                    if id == "fmt " && offset + 16 <= pending.count {
                        rate = Int(UInt32(pending[offset + 12]) | UInt32(pending[offset + 13]) << 8 | UInt32(pending[offset + 14]) << 16 | UInt32(pending[offset + 15]) << 24)
                    }
                    offset += 8 + size + (size & 1)
                }
                guard let start = found else { break }
                pending.removeFirst(start)
                frameSamples = max(1, rate / 100)
                phase = .pcm
                progressed = true
            case .pcm:
                let whole = pending.count / 2 * 2
                guard whole > 0 else { break }
                var samples = [Int16](repeating: 0, count: whole / 2)
                for i in 0..<samples.count { samples[i] = Int16(bitPattern: UInt16(pending[2 * i]) | UInt16(pending[2 * i + 1]) << 8) }
                pending.removeFirst(whole)
                out += take(samples)
            case .speex:
                guard pending.count >= 2 else { break }
                let length = Int(pending[0]) << 8 | Int(pending[1])
                guard length > 0, length <= 202 else {
                    phase = .failed
                    out.append(.error("Unable to decode the audio: bad Speex frame length \(length)."))
                    break
                }
                guard pending.count >= 2 + length else { break }
                let bits = Array(pending[2..<2 + length])
                pending.removeFirst(2 + length)
                if let samples = speex?.decode(frame: bits) { out += take(samples) }
                progressed = true
            }
        }
        return out
    }

    private mutating func take(_ samples: [Int16]) -> [Output] {
        var out: [Output] = []
        frame.append(contentsOf: samples)
        while frame.count >= frameSamples {
            let level = AudioLevel.dBFS(frame[0..<frameSamples])
            frame.removeFirst(frameSamples)
            audioMS += 10
            if level > settings.voicedThresholdDBFS {
                voicedMS += 10
                silenceAfterSpeechMS = 0
            } else if voicedMS > 0 {
                silenceAfterSpeechMS += 10
            }
            let shown = voicedMS == 0 ? 0 : min(words.count, (voicedMS + settings.msPerWord - 1) / settings.msPerWord)
            let stop = voicedMS >= 100 && silenceAfterSpeechMS >= settings.trailingSilenceMS && !saidSafeToStop
            if stop {
                saidSafeToStop = true
                wordsShown = words.count
                out.append(.partial(PartialTranscript(partialTranscript: transcript, durationMS: Double(audioMS), done: false, safeToStopAudio: true)))
            } else if shown != wordsShown && !saidSafeToStop {
                wordsShown = shown
                out.append(.partial(PartialTranscript(partialTranscript: words.prefix(shown).joined(separator: " "), durationMS: Double(audioMS), done: false)))
            }
        }
        return out
    }

    /// What the service heard, once the body has ended: the transcript if any speech was voiced.
    public var heardTranscript: String { voicedMS >= 100 ? transcript : "" }

    public var failed: Bool { if case .failed = phase { return true }; return false }

    /// The last partial, sent when the body ends.
    public var finalPartial: PartialTranscript {
        PartialTranscript(partialTranscript: heardTranscript, durationMS: Double(audioMS), done: true, safeToStopAudio: saidSafeToStop)
    }
}

