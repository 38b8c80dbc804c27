import FoundationEssentials
import Glibc
import CSpeex

/// The 44-byte WAV header exactly as the Python SDK sends it (docs/houndify-protocol.md, "WAV header"): dummy
/// RIFF and data sizes and the SDK's ByteRate of 8 × rate, which the service tolerates.
public enum WAVStreamHeader {
    public static func bytes(sampleRate: UInt32) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(44)
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        out.append(contentsOf: Array("RIFF".utf8)); u32(36); out.append(contentsOf: Array("WAVE".utf8))
        out.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(1)
        u32(sampleRate); u32(8 * sampleRate); u16(2); u16(16)
        out.append(contentsOf: Array("data".utf8)); u32(0)
        return out
    }
}

/// Turns 16-bit mono PCM into upload chunks. Not thread-safe: the voice search serialises calls.
protocol AudioUploadEncoder: Sendable {
    /// The header chunk sent right after RequestInfo.
    var header: [UInt8] { get }
    /// Chunks for these samples (possibly none, if the encoder is buffering a partial frame).
    mutating func encode(_ samples: UnsafeBufferPointer<Int16>) -> [[UInt8]]
    /// Chunks that flush what is buffered at the end of the audio.
    mutating func finish() -> [[UInt8]]
}

struct PCMUploadEncoder: AudioUploadEncoder {
    let header: [UInt8]
    init(sampleRate: Int) { header = WAVStreamHeader.bytes(sampleRate: UInt32(sampleRate)) }

    mutating func encode(_ samples: UnsafeBufferPointer<Int16>) -> [[UInt8]] {
        guard !samples.isEmpty else { return [] }
        // Each write is one chunk, as the SDK's fill() does; samples go little-endian on the wire.
        var bytes = [UInt8](repeating: 0, count: samples.count * 2)
        bytes.withUnsafeMutableBytes { raw in
            for (i, s) in samples.enumerated() { raw.storeBytes(of: s.littleEndian, toByteOffset: 2 * i, as: Int16.self) }
        }
        return [bytes]
    }

    mutating func finish() -> [[UInt8]] { [] }
}

/// Speex as the Python SDK sends it (docs/houndify-protocol.md, "Speex upload"): quality 10 CBR, wideband at
/// 16 kHz (narrowband at 8 kHz), the 80-byte SpeexHeader packet, then one chunk per 20 ms frame prefixed by its
/// byte count as a big-endian u16. Uses Debian's libspeex; the header's version string is set to the SDK's so the
/// bytes match its header.
// @unchecked: it holds a libspeex encoder state (a C handle) and its bits; VoiceSearch calls it only under its
// Mutex, one frame at a time.
final class SpeexUploadEncoder: AudioUploadEncoder, @unchecked Sendable {
    let header: [UInt8]
    private let state: OpaquePointer
    private var bits = SpeexBits()
    private let frameSize: Int
    private var pending: [Int16] = []
    private var output = [CChar](repeating: 0, count: 202)

    enum SetupError: Error, CustomStringConvertible {
        case unsupportedRate(Int)
        case encoderInit
        var description: String {
            switch self {
            case .unsupportedRate(let rate): "Speex upload needs \(VoiceSearchRate.accepted) audio, not \(rate) Hz"
            case .encoderInit: "libspeex could not create an encoder"
            }
        }
    }

    init(sampleRate: Int) throws {
        guard VoiceSearchRate.isAccepted(sampleRate) else { throw SetupError.unsupportedRate(sampleRate) }
        let modeID = sampleRate == VoiceSearchRate.narrowband ? SPEEX_MODEID_NB : SPEEX_MODEID_WB
        guard let mode = speex_lib_get_mode(modeID), let raw = speex_encoder_init(mode) else { throw SetupError.encoderInit }
        state = OpaquePointer(raw)
        var quality: Int32 = 10
        speex_encoder_ctl(UnsafeMutableRawPointer(state), SPEEX_SET_QUALITY, &quality)
        var size: Int32 = 0
        speex_encoder_ctl(UnsafeMutableRawPointer(state), SPEEX_GET_FRAME_SIZE, &size)
        frameSize = Int(size)
        speex_bits_init(&bits)
        header = SpeexUploadEncoder.makeHeader(sampleRate: sampleRate, mode: mode)
        pending.reserveCapacity(frameSize * 2)
    }

    deinit {
        speex_bits_destroy(&bits)
        speex_encoder_destroy(UnsafeMutableRawPointer(state))
    }

    static func makeHeader(sampleRate: Int, mode: UnsafePointer<SpeexMode>) -> [UInt8] {
        var h = SpeexHeader()
        speex_init_header(&h, Int32(sampleRate), 1, mode)
        withUnsafeMutableBytes(of: &h.speex_version) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            for (i, b) in "speex-1.2beta3".utf8.enumerated() { raw[i] = b }
        }
        // The SDK's encoder leaves these as below (docs/houndify-protocol.md, "Speex upload"; the header bytes are
        // in AudioUploadTests).
        h.vbr = 0
        h.frames_per_packet = 0
        h.bitrate = -1
        var size: Int32 = 0
        guard let packet = speex_header_to_packet(&h, &size) else { return [] }
        defer { speex_header_free(packet) }
        return Array(UnsafeRawBufferPointer(start: packet, count: Int(size)))
    }

    func encode(_ samples: UnsafeBufferPointer<Int16>) -> [[UInt8]] {
        pending.append(contentsOf: samples)
        var chunks: [[UInt8]] = []
        while pending.count >= frameSize {
            chunks.append(encodeFrame(pending[0..<frameSize]))
            pending.removeFirst(frameSize)
        }
        return chunks
    }

    func finish() -> [[UInt8]] {
        guard !pending.isEmpty else { return [] }
        // The SDK zero-pads the last partial frame.
        let frame = pending + [Int16](repeating: 0, count: frameSize - pending.count)
        pending.removeAll(keepingCapacity: true)
        return [encodeFrame(frame[...])]
    }

    private func encodeFrame(_ frame: ArraySlice<Int16>) -> [UInt8] {
        speex_bits_reset(&bits)
        var copy = Array(frame)
        _ = copy.withUnsafeMutableBufferPointer { speex_encode_int(UnsafeMutableRawPointer(state), $0.baseAddress, &bits) }
        let count = Int(speex_bits_write(&bits, &output, Int32(output.count)))
        var chunk = [UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count)]
        chunk.append(contentsOf: output.prefix(count).map { UInt8(bitPattern: $0) })
        return chunk
    }
}

/// Decodes the SDK's Speex framing back to PCM (used by the local service, which must hear the audio to find the
/// end of speech).
public final class SpeexStreamDecoder {
    private let state: OpaquePointer
    private var bits = SpeexBits()
    public let frameSize: Int
    public let sampleRate: Int
    private var out: [Int16]

    /// `header` is the 80-byte SpeexHeader packet; returns nil if it is not one.
    public init?(header: [UInt8]) {
        guard header.count >= 80, header.starts(with: Array("Speex   ".utf8)) else { return nil }
        let parsed = header.withUnsafeBytes { raw in
            speex_packet_to_header(UnsafeMutablePointer(mutating: raw.baseAddress!.assumingMemoryBound(to: CChar.self)), Int32(raw.count))
        }
        guard let h = parsed else { return nil }
        defer { speex_header_free(h) }
        guard let mode = speex_lib_get_mode(h.pointee.mode), let raw = speex_decoder_init(mode) else { return nil }
        state = OpaquePointer(raw)
        sampleRate = Int(h.pointee.rate)
        var size: Int32 = 0
        speex_decoder_ctl(UnsafeMutableRawPointer(state), SPEEX_GET_FRAME_SIZE, &size)
        frameSize = Int(size)
        out = [Int16](repeating: 0, count: frameSize)
        speex_bits_init(&bits)
    }

    deinit {
        speex_bits_destroy(&bits)
        speex_decoder_destroy(UnsafeMutableRawPointer(state))
    }

    /// Decodes one frame's Speex bits (without the 2-byte length prefix).
    public func decode(frame: [UInt8]) -> [Int16]? {
        var bytes = frame.map { CChar(bitPattern: $0) }
        speex_bits_read_from(&bits, &bytes, Int32(bytes.count))
        let status = out.withUnsafeMutableBufferPointer { speex_decode_int(UnsafeMutableRawPointer(state), &bits, $0.baseAddress) }
        return status == 0 ? out : nil
    }
}

/// The rates Houndify takes a voice search's audio at (docs/houndify-protocol.md): wideband, as the speaker sends,
/// or narrowband.
public enum VoiceSearchRate {
    public static let wideband = 16_000
    public static let narrowband = 8_000
    static func isAccepted(_ rate: Int) -> Bool { rate == wideband || rate == narrowband }
    static let accepted = "\(wideband) or \(narrowband) Hz"
}
