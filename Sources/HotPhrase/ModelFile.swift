import FoundationEssentials
import Glibc
import Platform
import AudioCore

/// Why a model file cannot be used. Each names the file, so a speaker with a missing or damaged model says so at
/// start-up instead of silently never hearing its name.
public struct HotPhraseModelError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let problem: String
    public var description: String { "hot-phrase model \(path): \(problem)" }
}

/// A trained hot-phrase detector's model file (.hpm): b"HPM1", a little-endian u32 header length, a JSON header,
/// then the tensors. The header's `format` says which detector it holds:
/// - 1: the small convolutional network tools/hotphrase/hotphrase/model.py trains (log-mel front end, weights int8 with
///   one float32 scale per output row, everything else float32);
/// - 2: Google's speech_embedding front end with a classifier head, as tools/hotphrase/hotphrase/export_embedding.py
///   writes it (weights float16 or float32; see EmbeddingModel.swift).
/// Weights are widened to Float once here; the detector then only reads them.
public struct HotPhraseModel: Sendable {
    public let path: String
    public let phrase: String
    public let sampleRate: Int
    public let smoothing: Int
    public let defaultThreshold: Double
    /// A stop word's threshold over a ring (`ring_threshold`, optional): a ring is one known sound the head was
    /// trained over, so it can listen closer there than over an answer, whose words are anyone's. Nil: the default.
    public let ringThreshold: Double?
    public let refractorySeconds: Double
    public let fileBytes: Int
    /// The header's format number (1 or 2, above).
    public let format: Int
    let network: Network

    enum Network: Sendable {
        case convolutional(ConvolutionalModel)
        case embedding(EmbeddingModel)
    }

    /// Seconds of audio one detector step (one score) covers.
    public var stepSeconds: Double {
        switch network {
        case .convolutional(let m): Double(m.stack * m.hop) / Double(sampleRate)
        case .embedding(let m): Double(m.mel.group * m.mel.hop) / Double(sampleRate)
        }
    }

    /// Whether the model computes speech embeddings (format 2), which enrollment and the personal scorer need.
    public var hasEmbeddings: Bool {
        if case .embedding = network { return true }
        return false
    }

    /// Steps the detector needs before its first score.
    public var warmUpSteps: Int {
        switch network {
        case .convolutional(let m): m.dilations.reduce(0) { $0 + (m.kernel - 1) * $1 }
        case .embedding(let m): m.warmUpSteps
        }
    }

    /// For a format-2 model, multiply-adds per step (80 ms) of the embedding network over a whole window, of
    /// the same network streaming, and of the head; nil for format 1.
    public var embeddingMultiplyAdds: (window: Int, streaming: Int, head: Int)? {
        if case .embedding(let m) = network { return m.multiplyAdds }
        return nil
    }

    public static func load(path: String) throws -> HotPhraseModel {
        try HotPhraseModel(bytes: readFile(path), path: path)
    }

    /// The whole file, read straight into the array the loader walks: a format-2 model is 1.5 MB, and reading it
    /// through Data first held it twice while loading. The errors name the problem (no file, a folder, permissions).
    static func readFile(_ path: String) throws -> [UInt8] {
        func fail(_ code: Int32) -> HotPhraseModelError {
            let why = switch code {
            case ENOENT: "no such file"
            case EACCES: "cannot be read (permissions?)"
            case EISDIR: "is a folder, not a model file"
            default: "cannot be read (\(String(cString: strerror(code))))"
            }
            return HotPhraseModelError(path: path, problem: why)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw fail(errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw fail(errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw fail((info.st_mode & S_IFMT) == S_IFDIR ? EISDIR : EINVAL) }
        let size = Int(info.st_size)
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = 0
            while count < size {
                let n = read(fd, buffer.baseAddress! + count, size - count)
                if n > 0 { count += n } else if n == 0 || errno != EINTR { failure = n == 0 ? 0 : errno; break }
            }
        }
        if failure != 0 { throw fail(failure) }
        return bytes  // shorter than `size` only if the file shrank meanwhile: the loader then says it is truncated
    }

    /// What every format's header has.
    private struct Common: Decodable {
        let format: Int
        let phrase: String
        let sample_rate: Int
        let smoothing: Int
        let default_threshold: Double
        let ring_threshold: Double?
        let refractory_seconds: Double
    }

    public init(bytes: [UInt8], path: String) throws {
        func fail(_ problem: String) -> HotPhraseModelError { HotPhraseModelError(path: path, problem: problem) }
        let (file, headerBytes, payload) = try TensorFile.container(bytes: bytes, path: path)
        let common: Common
        do {
            common = try JSONDecoder().decode(Common.self, from: headerBytes)
        } catch {
            throw fail("its header is not valid: \(error)")
        }
        guard common.format == 1 || common.format == 2 else {
            throw fail("format \(common.format) is not supported (this build reads formats 1 and 2)")
        }
        guard common.sample_rate == SpeakerAudio.sampleRate else {
            throw fail("made for \(common.sample_rate) Hz audio; the speaker listens at \(SpeakerAudio.sampleRate) Hz")
        }
        guard common.smoothing > 0, (0...1).contains(common.default_threshold), common.refractory_seconds >= 0,
              common.ring_threshold.map({ (0...1).contains($0) }) ?? true else {
            throw fail("its smoothing, threshold or refractory period is out of range")
        }
        do {
            switch common.format {
            case 1: network = .convolutional(try ConvolutionalModel(header: headerBytes, file: file, payload: payload))
            default: network = .embedding(try EmbeddingModel(header: headerBytes, file: file, payload: payload))
            }
        } catch let error as DecodingError {
            throw fail("its header is not valid: \(error)")
        }
        self.path = path
        format = common.format
        phrase = common.phrase
        sampleRate = common.sample_rate
        smoothing = common.smoothing
        defaultThreshold = common.default_threshold
        ringThreshold = common.ring_threshold
        refractorySeconds = common.refractory_seconds
        fileBytes = bytes.count
    }
}

/// The bytes of a model file and the reading of its tensor table (shared by both formats).
struct TensorFile {
    let bytes: [UInt8]
    let path: String

    struct Entry: Decodable {
        let name: String
        let dtype: String
        let shape: [Int]
        let offset: Int
        let bytes: Int
        let scale_offset: Int?
    }

    func fail(_ problem: String) -> HotPhraseModelError { HotPhraseModelError(path: path, problem: problem) }

    /// The container every .hpm file is (models and the negative bank): b"HPM1", a little-endian u32 header length,
    /// the JSON header, then the tensors from `payload` on.
    static func container(bytes: [UInt8], path: String) throws -> (file: TensorFile, header: Data, payload: Int) {
        let file = TensorFile(bytes: bytes, path: path)
        guard bytes.count >= 8, bytes[0..<4].elementsEqual(Array("HPM1".utf8)) else {
            throw file.fail("not a hot-phrase model file (it must start with HPM1; was it made by tools/hotphrase?)")
        }
        let headerLength = Int(file.u32(4))
        guard headerLength > 0, 8 + headerLength <= bytes.count else {
            throw file.fail("truncated: the header says \(headerLength) bytes, the file has \(bytes.count)")
        }
        return (file, Data(bytes[8..<(8 + headerLength)]), 8 + headerLength)
    }

    /// The float16 tensor `name` of `table` as its raw bit patterns (widened one row at a time with `f16(bits:)`),
    /// checked as `tensor` checks: the negative bank's frames stay half the size in memory.
    func halves(_ table: [String: Entry], _ name: String, _ shape: [Int], payload: Int) throws -> [UInt16] {
        guard let t = table[name] else { throw fail("tensor \(name) is missing") }
        guard t.shape == shape else { throw fail("tensor \(name) has shape \(t.shape), expected \(shape)") }
        guard t.dtype == "float16" else { throw fail("tensor \(name) is \(t.dtype), expected float16") }
        let count = shape.reduce(1, *)
        guard t.offset >= 0, t.bytes == count * 2, payload + t.offset + t.bytes <= bytes.count else {
            throw fail("tensor \(name) lies outside the file (truncated?)")
        }
        let base = payload + t.offset
        let values = (0..<count).map { UInt16(bytes[base + 2 * $0]) | UInt16(bytes[base + 2 * $0 + 1]) << 8 }
        // exponent all ones: infinite or NaN
        guard !values.contains(where: { $0 & 0x7c00 == 0x7c00 }) else { throw fail("it holds NaN or infinite values (\(name))") }
        return values
    }

    /// Little-endian u32 at `o` (the header length, float32 bit patterns).
    func u32(_ o: Int) -> UInt32 {
        UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
    }

    /// IEEE half at `o`, widened (Float16 is not on every platform Swift builds the speaker for).
    func f16(_ o: Int) -> Float { Self.f16(bits: UInt16(bytes[o]) | UInt16(bytes[o + 1]) << 8) }

    static func f16(bits: UInt16) -> Float {
        let h = UInt32(bits)
        let sign = (h & 0x8000) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff
        if exponent == 0 {  // zero or subnormal: mantissa * 2^-24
            let v = Float(mantissa) * 0x1p-24
            return sign != 0 ? -v : v
        }
        if exponent == 31 { return Float(bitPattern: sign | 0x7f80_0000 | mantissa << 13) }
        return Float(bitPattern: sign | (exponent + 112) << 23 | mantissa << 13)
    }

    /// The tensor `name` of `table`, checked against `shape` and the file's length, as Floats.
    func tensor(_ table: [String: Entry], _ name: String, _ shape: [Int], payload: Int) throws -> [Float] {
        guard let t = table[name] else { throw fail("tensor \(name) is missing") }
        guard t.shape == shape else { throw fail("tensor \(name) has shape \(t.shape), expected \(shape)") }
        let count = shape.reduce(1, *)
        let width: Int
        switch t.dtype {
        case "int8": width = 1
        case "float16": width = 2
        case "float32": width = 4
        default: throw fail("tensor \(name) has unknown type \(t.dtype)")
        }
        guard t.offset >= 0, t.bytes == count * width, payload + t.offset + t.bytes <= bytes.count else {
            throw fail("tensor \(name) lies outside the file (truncated?)")
        }
        let base = payload + t.offset
        let values: [Float]
        switch width {
        case 4: values = (0..<count).map { Float(bitPattern: u32(base + 4 * $0)) }
        case 2: values = (0..<count).map { f16(base + 2 * $0) }
        default:
            let rows = shape[0]
            guard let so = t.scale_offset, so >= 0, payload + so + 4 * rows <= bytes.count else {
                throw fail("tensor \(name) has no scales")
            }
            let perRow = count / rows
            let scales = (0..<rows).map { Float(bitPattern: u32(payload + so + 4 * $0)) }
            values = (0..<count).map { Float(Int8(bitPattern: bytes[base + $0])) * scales[$0 / perRow] }
        }
        guard values.allSatisfy(\.isFinite) else { throw fail("it holds NaN or infinite weights (\(name))") }
        return values
    }
}

/// Format 1: the small convolutional network of tools/hotphrase/hotphrase/model.py and its log-mel front end.
struct ConvolutionalModel: Sendable {
    let sampleRate: Int
    let window: Int
    let hop: Int
    let fftSize: Int
    let mels: Int
    let fmin: Double
    let fmax: Double
    let logFloor: Float
    let stack: Int
    let channels: Int
    let kernel: Int
    let dilations: [Int]

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

    private struct Header: Decodable {
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
        let tensors: [TensorFile.Entry]
    }

    init(header bytes: Data, file: TensorFile, payload: Int) throws {
        let header = try JSONDecoder().decode(Header.self, from: bytes)
        guard header.window > 0, header.hop > 0, header.window <= header.fft, header.fft >= 4,
              header.fft & (header.fft - 1) == 0, header.mels > 0, header.stack > 0, header.channels > 0,
              header.kernel > 0, !header.dilations.isEmpty, header.dilations.allSatisfy({ $0 > 0 }),
              header.fmin >= 0, header.fmax > header.fmin, header.fmax <= Double(header.sample_rate) / 2,
              header.log_floor > 0
        else { throw file.fail("its front-end or layer numbers are out of range") }
        var table: [String: TensorFile.Entry] = [:]
        for t in header.tensors { table[t.name] = t }
        func tensor(_ name: String, _ shape: [Int]) throws -> [Float] { try file.tensor(table, name, shape, payload: payload) }
        let c = header.channels, k = header.kernel
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
    }
}

extension HotPhraseModel {
    /// Where the shipped model is looked for when the config names none, first match wins
    /// (`HOUND_SPEAKER_HOTPHRASE_PATH` first; the rule is ShippedFiles's, in Platform).
    public static var searchDirectories: [String] { ShippedFiles.directories(.hotPhrase) }

    public static let defaultFileName = "ok-hound.hpm"

    /// Loads `path` if given (a config value or option), else the first `ok-hound.hpm` in `searchDirectories`.
    public static func locate(_ path: String?) throws -> HotPhraseModel {
        if let path, !path.isEmpty { return try load(path: path) }
        if let found = ShippedFiles.locate(defaultFileName, in: .hotPhrase) { return try load(path: found) }
        throw HotPhraseModelError(path: defaultFileName,
                                  problem: "not found in \(searchDirectories.joined(separator: ", ")) (install share/hotphrase, or set [hotphrase] model)")
    }
}
