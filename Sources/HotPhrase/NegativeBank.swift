#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Digests
import Platform
import FoundationEssentials

/// A problem with one of the household's files (the negative bank, household.json) or with what it is used for:
/// the file and the problem, in words a person can act on.
public struct HouseholdError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What the file is ("negative bank", "household file", "hot-phrase model").
    public let file: String
    public let path: String
    public let problem: String
    public var description: String { "\(file) \(path): \(problem)" }

    public init(file: String, path: String, problem: String) {
        self.file = file
        self.path = path
        self.problem = problem
    }
}

/// The shipped bank of negative embeddings (docs/household.md, "Files"): real speech that is not any phrase, as
/// raw embedding frames in segments, each segment embedded from reset as a stream. Enrolling a template measures
/// its DTW scores over the bank (`measure`), which turns them into a z-score with one threshold for every phrase.
/// Only enrollment and a changed bank read the frames; the running detector needs only `mean` and `zThreshold`.
public struct NegativeBank: Sendable {
    public struct Source: Codable, Sendable, Equatable {
        public let name: String
        public let licence: String
        public let seconds: Double
        public let speakers: Int
    }

    public let path: String
    /// SHA-256 of the file's bytes, lowercase hex: household.json keeps it with every template's mu and sd.
    public let sha256: String
    public let dim: Int
    /// Frames per segment.
    public let segments: [Int]
    /// The z a personal score must reach at sensitivity 0.5.
    public let zThreshold: Double
    /// The frames' mean, which every frame is centred on before the cosine distance.
    public let mean: [Float]
    public let sources: [Source]
    /// [sum(segments)][dim] float16 bit patterns (half the memory of Floats; widened one frame at a time).
    let frames: [UInt16]

    public static let defaultFileName = "negative-bank.hpm"

    /// Loads `path` if given, else the first `negative-bank.hpm` where the shipped model is looked for.
    public static func locate(_ path: String?) throws -> NegativeBank {
        if let path, !path.isEmpty { return try load(path: path) }
        if let found = ShippedFiles.locate(defaultFileName, in: .hotPhrase) { return try load(path: found) }
        throw HouseholdError(file: "negative bank", path: defaultFileName,
                             problem: "not found in \(HotPhraseModel.searchDirectories.joined(separator: ", ")) (install share/hotphrase)")
    }

    public static func load(path: String) throws -> NegativeBank {
        let bytes: [UInt8]
        do { bytes = try HotPhraseModel.readFile(path) } catch let error as HotPhraseModelError {
            throw HouseholdError(file: "negative bank", path: path, problem: error.problem)
        }
        return try NegativeBank(bytes: bytes, path: path)
    }

    private struct Header: Decodable {
        let format: Int
        let kind: String
        let embedding_dim: Int
        let segments: [Int]
        let z_threshold: Double
        let sources: [Source]
        let tensors: [TensorFile.Entry]
    }

    public init(bytes: [UInt8], path: String) throws {
        func fail(_ problem: String) -> HouseholdError { HouseholdError(file: "negative bank", path: path, problem: problem) }
        do {
            let (file, headerBytes, payload) = try TensorFile.container(bytes: bytes, path: path)
            struct Kind: Decodable {
                let format: Int?
                let kind: String?
            }
            let kind = try? JSONDecoder().decode(Kind.self, from: headerBytes)
            guard kind?.format == 3, kind?.kind == "negative-embeddings" else {
                let format = (kind?.format).map { "format \($0)" } ?? "without a format"
                let named = (kind?.kind).map { " \"\($0)\"" } ?? ""
                throw fail("is \(format)\(named), not a negative bank (format 3, \"negative-embeddings\", made by tools/hotphrase)")
            }
            let header: Header
            do { header = try JSONDecoder().decode(Header.self, from: headerBytes) } catch {
                throw fail("its header is not a negative bank's: \(error)")
            }
            guard header.embedding_dim > 0, !header.segments.isEmpty, header.segments.allSatisfy({ $0 > 0 }) else {
                throw fail("its embedding_dim or segment lengths are out of range (each must be above 0)")
            }
            guard header.z_threshold.isFinite else { throw fail("its z_threshold is not a number") }
            var table: [String: TensorFile.Entry] = [:]
            for t in header.tensors { table[t.name] = t }
            let total = header.segments.reduce(0, +)
            frames = try file.halves(table, "frames", [total, header.embedding_dim], payload: payload)
            mean = try file.tensor(table, "mean", [header.embedding_dim], payload: payload)
            dim = header.embedding_dim
            segments = header.segments
            zThreshold = header.z_threshold
            sources = header.sources
        } catch let error as HotPhraseModelError {
            throw fail(error.problem.replacing("not a hot-phrase model file", with: "not a negative bank"))
        }
        self.path = path
        sha256 = Self.sha256(bytes)
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        Digests.hex(Digests.sha256(bytes))
    }

    /// The personal threshold for a sensitivity in 0...1 (docs/household.md): 0.5 is the bank's own, each 0.1
    /// higher hears more readily by 0.4 standard deviations.
    public func zThreshold(sensitivity: Double) -> Double {
        zThreshold + (0.5 - min(1, max(0, sensitivity))) * 4
    }

    /// Centres raw embeddings on the bank's mean and scales each to unit length, one row after another (the
    /// template a DTW scorer holds).
    func normalised(_ raw: [[Float]]) -> [Float] {
        var out = [Float](repeating: 0, count: raw.count * dim)
        out.withUnsafeMutableBufferPointer { o in
            for (k, e) in raw.enumerated() {
                e.withUnsafeBufferPointer { normalise($0.baseAddress!, into: o.baseAddress! + k * dim) }
            }
        }
        return out
    }

    /// `x = (e - m) / |e - m|` (a zero vector stays zero).
    @inline(__always)
    func normalise(_ e: UnsafePointer<Float>, into x: UnsafeMutablePointer<Float>) {
        mean.withUnsafeBufferPointer { Self.normalise(e, mean: $0.baseAddress!, into: x, dim: dim) }
    }

    @inline(__always)
    static func normalise(_ e: UnsafePointer<Float>, mean m: UnsafePointer<Float>, into x: UnsafeMutablePointer<Float>, dim: Int) {
        var sum: Float = 0
        for j in 0..<dim {
            let v = e[j] - m[j]
            x[j] = v
            sum += v * v
        }
        let scale: Float = sum > 0 ? 1 / sum.squareRoot() : 0
        for j in 0..<dim { x[j] *= scale }
    }

    /// mu_T and sd_T (population) of a template's DTW scores over every segment, from each segment's frame L on
    /// (0-based index L - 1 and after). Throws if no segment is long enough to give a score.
    public func measure(template raw: [[Float]]) throws -> (mu: Double, sd: Double) {
        guard !raw.isEmpty, raw.allSatisfy({ $0.count == dim }) else {
            throw HouseholdError(file: "negative bank", path: path, problem: "holds \(dim)-number embeddings; the template's are not")
        }
        let dtw = SubsequenceDTW(template: normalised(raw), dim: dim)
        let length = raw.count
        var count = 0
        var sum = 0.0, sumSquares = 0.0
        var e = [Float](repeating: 0, count: dim), x = [Float](repeating: 0, count: dim)
        var first = 0
        for segment in segments {
            dtw.reset()
            for t in 0..<segment {
                frame(first + t, into: &e)
                let s = e.withUnsafeBufferPointer { eb in
                    x.withUnsafeMutableBufferPointer { xb in
                        normalise(eb.baseAddress!, into: xb.baseAddress!)
                        return dtw.push(UnsafePointer(xb.baseAddress!))
                    }
                }
                if t >= length - 1, s.isFinite {
                    count += 1
                    sum += Double(s)
                    sumSquares += Double(s) * Double(s)
                }
            }
            first += segment
        }
        guard count > 0 else {
            throw HouseholdError(file: "negative bank", path: path,
                                 problem: "has no segment longer than the template's \(length) frames to measure it against")
        }
        let mu = sum / Double(count)
        return (mu, max(0, sumSquares / Double(count) - mu * mu).squareRoot())
    }

    /// Raw frame `k`, widened.
    func frame(_ k: Int, into e: inout [Float]) {
        for j in 0..<dim { e[j] = TensorFile.f16(bits: frames[k * dim + j]) }
    }
}
