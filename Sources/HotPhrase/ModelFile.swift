import FoundationEssentials
import Glibc

/// Why a model file cannot be used. Each names the file, so a speaker with a missing or damaged model says so at
/// start-up instead of silently never hearing its name.
public struct HotPhraseModelError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let problem: String
    public var description: String { "hot-phrase model \(path): \(problem)" }
}

/// A trained "OK Hound" network as tools/hotphrase/hp/model.py writes it (.hpm): b"HPM1", a little-endian u32
/// header length, a JSON header (front-end numbers, layers, tensor table, default threshold), then the tensors
/// (weights int8 with one float32 scale per output row, everything else float32). Weights are dequantised once
/// here; the detector then only reads them.
public struct HotPhraseModel: Sendable {
    public let path: String
    public let phrase: String
    public let sampleRate: Int
    public let window: Int
    public let hop: Int
    public let fftSize: Int
    public let mels: Int
    public let fmin: Double
    public let fmax: Double
    public let logFloor: Float
    public let stack: Int
    public let channels: Int
    public let kernel: Int
    public let dilations: [Int]
    public let smoothing: Int
    public let defaultThreshold: Double
    public let refractorySeconds: Double
    public let fileBytes: Int

    let normMean: [Float]
    let normInvStd: [Float]
    /// [channels][stack * mels], row-major by output channel.
    let inWeight: [Float]
    let inBias: [Float]
    /// Per block: [channels][kernel] depthwise taps (tap kernel-1 is the newest step) and [channels][channels].
    let dwWeight: [[Float]]
    let dwBias: [[Float]]
    let pwWeight: [[Float]]
    let pwBias: [[Float]]
    let outWeight: [Float]
    let outBias: Float

    /// Seconds of audio one network step covers.
    public var stepSeconds: Double { Double(stack * hop) / Double(sampleRate) }
    /// Steps the network needs before its first output (its receptive field minus one).
    public var warmUpSteps: Int { dilations.reduce(0) { $0 + (kernel - 1) * $1 } }

    public static func load(path: String) throws -> HotPhraseModel {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read (permissions?)" : "no such file"
            throw HotPhraseModelError(path: path, problem: why)
        }
        return try HotPhraseModel(bytes: [UInt8](data), path: path)
    }

    private struct Header: Decodable {
        struct Tensor: Decodable {
            let name: String
            let dtype: String
            let shape: [Int]
            let offset: Int
            let bytes: Int
            let scale_offset: Int?
        }
        let format: Int
        let phrase: String
        let sample_rate: Int
        let window: Int
        let hop: Int
        let fft: Int
        let mels: Int
        let fmin: Double
        let fmax: Double
        let log_floor: Double
        let stack: Int
        let channels: Int
        let kernel: Int
        let dilations: [Int]
        let smoothing: Int
        let default_threshold: Double
        let refractory_seconds: Double
        let tensors: [Tensor]
    }

    public init(bytes: [UInt8], path: String) throws {
        func fail(_ problem: String) -> HotPhraseModelError { HotPhraseModelError(path: path, problem: problem) }
        guard bytes.count >= 8, bytes[0..<4].elementsEqual(Array("HPM1".utf8)) else {
            throw fail("not a hot-phrase model file (it must start with HPM1; was it made by tools/hotphrase?)")
        }
        // Little-endian u32 at `o` (the header length, float32 bit patterns).
        func u32(_ o: Int) -> UInt32 {
            UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
        }
        let headerLength = Int(u32(4))
        guard headerLength > 0, 8 + headerLength <= bytes.count else {
            throw fail("truncated: the header says \(headerLength) bytes, the file has \(bytes.count)")
        }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(bytes[8..<(8 + headerLength)]))
        } catch {
            throw fail("its header is not valid: \(error)")
        }
        guard header.format == 1 else { throw fail("format \(header.format) is not supported (this build reads format 1)") }
        guard header.sample_rate == 16_000 else { throw fail("made for \(header.sample_rate) Hz audio; the speaker listens at 16000 Hz") }
        guard header.window > 0, header.hop > 0, header.window <= header.fft, header.fft >= 4,
              header.fft & (header.fft - 1) == 0, header.mels > 0, header.stack > 0, header.channels > 0,
              header.kernel > 0, !header.dilations.isEmpty, header.dilations.allSatisfy({ $0 > 0 }), header.smoothing > 0,
              header.fmin >= 0, header.fmax > header.fmin, header.fmax <= Double(header.sample_rate) / 2,
              header.log_floor > 0, (0...1).contains(header.default_threshold), header.refractory_seconds >= 0
        else { throw fail("its front-end or layer numbers are out of range") }

        let payload = 8 + headerLength
        var table: [String: Header.Tensor] = [:]
        for t in header.tensors { table[t.name] = t }
        func tensor(_ name: String, _ shape: [Int]) throws -> [Float] {
            guard let t = table[name] else { throw fail("tensor \(name) is missing") }
            guard t.shape == shape else { throw fail("tensor \(name) has shape \(t.shape), expected \(shape)") }
            let count = shape.reduce(1, *)
            let width = t.dtype == "int8" ? 1 : 4
            guard t.dtype == "int8" || t.dtype == "float32" else { throw fail("tensor \(name) has unknown type \(t.dtype)") }
            guard t.offset >= 0, t.bytes == count * width, payload + t.offset + t.bytes <= bytes.count else {
                throw fail("tensor \(name) lies outside the file (truncated?)")
            }
            let base = payload + t.offset
            if t.dtype == "float32" {
                return (0..<count).map { Float(bitPattern: u32(base + 4 * $0)) }
            }
            let rows = shape[0]
            guard let so = t.scale_offset, so >= 0, payload + so + 4 * rows <= bytes.count else {
                throw fail("tensor \(name) has no scales")
            }
            let perRow = count / rows
            let scales = (0..<rows).map { Float(bitPattern: u32(payload + so + 4 * $0)) }
            return (0..<count).map { Float(Int8(bitPattern: bytes[base + $0])) * scales[$0 / perRow] }
        }
        let c = header.channels, k = header.kernel
        self.path = path
        phrase = header.phrase
        sampleRate = header.sample_rate
        window = header.window
        hop = header.hop
        fftSize = header.fft
        mels = header.mels
        fmin = header.fmin
        fmax = header.fmax
        logFloor = Float(header.log_floor)
        stack = header.stack
        channels = c
        kernel = k
        dilations = header.dilations
        smoothing = header.smoothing
        defaultThreshold = header.default_threshold
        refractorySeconds = header.refractory_seconds
        fileBytes = bytes.count
        normMean = try tensor("norm.mean", [header.mels])
        normInvStd = try tensor("norm.inv_std", [header.mels])
        inWeight = try tensor("in.weight", [c, header.stack * header.mels])
        inBias = try tensor("in.bias", [c])
        var dw: [[Float]] = [], dwb: [[Float]] = [], pw: [[Float]] = [], pwb: [[Float]] = []
        for i in header.dilations.indices {
            dw.append(try tensor("dw\(i).weight", [c, k]))
            dwb.append(try tensor("dw\(i).bias", [c]))
            pw.append(try tensor("pw\(i).weight", [c, c]))
            pwb.append(try tensor("pw\(i).bias", [c]))
        }
        dwWeight = dw
        dwBias = dwb
        pwWeight = pw
        pwBias = pwb
        outWeight = try tensor("out.weight", [1, c])
        outBias = try tensor("out.bias", [1])[0]
        let all = [normMean, normInvStd, inWeight, inBias, outWeight, [outBias]] + dw + dwb + pw + pwb
        guard all.allSatisfy({ $0.allSatisfy(\.isFinite) }) else { throw fail("it holds NaN or infinite weights") }
    }
}

extension HotPhraseModel {
    /// Where the shipped model is looked for when the config names none, first match wins:
    /// `HOUND_SPEAKER_HOTPHRASE_PATH` (colon-separated directories), /etc/hound-speaker/hotphrase,
    /// /usr/share/hound-speaker/hotphrase, ./share/hotphrase.
    public static var searchDirectories: [String] {
        let extra = ProcessInfo.processInfo.environment["HOUND_SPEAKER_HOTPHRASE_PATH"]?.split(separator: ":").map(String.init) ?? []
        return extra + ["/etc/hound-speaker/hotphrase", "/usr/share/hound-speaker/hotphrase", "share/hotphrase"]
    }

    public static let defaultFileName = "ok-hound.hpm"

    /// Loads `path` if given (a config value or option), else the first `ok-hound.hpm` in `searchDirectories`.
    public static func locate(_ path: String?) throws -> HotPhraseModel {
        if let path, !path.isEmpty { return try load(path: path) }
        for dir in searchDirectories {
            let candidate = dir + "/" + defaultFileName
            if FileManager.default.fileExists(atPath: candidate) { return try load(path: candidate) }
        }
        throw HotPhraseModelError(path: defaultFileName,
                                  problem: "not found in \(searchDirectories.joined(separator: ", ")) (install share/hotphrase, or set [hotphrase] model)")
    }
}
