#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
public import FoundationEssentials
import Platform
import AudioCore

/// The household's voices (docs/household.md, "Files"): the phrases it enrolled, each with its templates (raw
/// embeddings, never audio) and their mu and sd against the bank, and the household's own false wakes. Kept in
/// household.json under the state directory, 0600, written atomically.
public struct Household: Codable, Sendable, Equatable {
    public struct Template: Codable, Sendable, Equatable {
        /// Raw embeddings (not centred), 4 to 24 frames.
        public var embeddings: [[Float]]
        public var mu: Double
        public var sd: Double
        public var added: Date
        /// The bank mu and sd were measured against.
        public var bankSHA256: String
        /// True when an answered wake taught it (`learn`), absent or nil for an enrolled take.
        public var learned: Bool?

        public var isLearned: Bool { learned == true }

        enum CodingKeys: String, CodingKey {
            case embeddings, mu, sd, added, learned
            case bankSHA256 = "bank_sha256"
        }
    }

    /// A personal head (docs/household.md, "The personal head"): trained on one enrollment session's takes, a z
    /// against the bank it was scaled with.
    public struct Head: Codable, Sendable, Equatable {
        /// `PersonalHead.window` frames of the bank's `dim` numbers, the oldest frame's first.
        public var weights: [Float]
        public var bias: Double
        public var added: Date
        /// The bank its z is against; another bank's scales it again (`remeasure`).
        public var bankSHA256: String
        /// The takes it was trained on.
        public var takes: Int

        public var head: PersonalHead { PersonalHead(weights: weights, bias: bias) }

        enum CodingKeys: String, CodingKey {
            case weights, bias, added, takes
            case bankSHA256 = "bank_sha256"
        }
    }

    public struct Phrase: Codable, Sendable, Equatable {
        public var text: String
        public var templates: [Template]
        /// One a session of at least `PersonalHead.minimumTakes` takes (absent in files from before the heads).
        public var heads: [Head]?

        public init(text: String, templates: [Template], heads: [Head]? = nil) {
            self.text = text
            self.templates = templates
            self.heads = heads
        }

        public var headCount: Int { heads?.count ?? 0 }
    }

    /// A wake that heard nothing: the last frames before it (raw embeddings).
    public struct Negative: Codable, Sendable, Equatable {
        public var embeddings: [[Float]]
        public var added: Date
    }

    public var version = 1
    public var phrases: [Phrase] = []
    public var negatives: [Negative] = []

    /// The newest household negatives kept.
    public static let negativesKept = 64
    /// The newest templates learned from answered wakes kept per phrase, beside its enrolled takes (which are
    /// never replaced by them).
    public static let learnedKept = 4
    public static let fileName = "household.json"

    public init() {}

    /// The phrase `text` names, compared without case or surrounding spaces.
    public func phrase(_ text: String) -> Phrase? {
        phrases.first { Self.same($0.text, text) }
    }

    public static func same(_ a: String, _ b: String) -> Bool {
        a.trimmed().lowercased() == b.trimmed().lowercased()
    }

    /// The phrase that, enrolled (`hound-speaker enroll --phrase stop`), stops a ringing timer or an answer
    /// without the hot phrase first; it is listened for only while the speaker rings or speaks (docs/household.md).
    public static let stopPhrase = "stop"

    public static func isStopPhrase(_ text: String) -> Bool { same(text, stopPhrase) }

    /// How many templates `text` has now: the `sessionStart` of an enrollment session that begins now.
    public func templateCount(_ text: String) -> Int { phrase(text)?.templates.count ?? 0 }

    /// Throws unless every template's and negative's embeddings are `dim` numbers each (a household made with
    /// another model's embedding cannot be scored with this one).
    public func check(dim: Int) throws {
        let rows = phrases.flatMap { $0.templates.flatMap(\.embeddings) } + negatives.flatMap(\.embeddings)
        guard rows.allSatisfy({ $0.count == dim }) else {
            throw HouseholdError(file: "household file", path: Self.fileName,
                                 problem: "holds embeddings that are not \(dim) numbers each (made with another model?)")
        }
        guard phrases.allSatisfy({ ($0.heads ?? []).allSatisfy { $0.weights.count == PersonalHead.window * dim } }) else {
            throw HouseholdError(file: "household file", path: Self.fileName,
                                 problem: "holds a personal head that is not \(PersonalHead.window) frames of \(dim) numbers (made with another model?)")
        }
    }

    /// Keeps `head`, trained on `takes` takes of `text` and scaled against `bank`, beside the phrase's templates (a
    /// phrase with no templates is not enrolled, and keeps no head).
    public mutating func addHead(_ head: PersonalHead, phrase text: String, takes: Int, bank: NegativeBank, now: Date = Date()) throws {
        try check(dim: bank.dim)
        guard head.weights.count == PersonalHead.window * bank.dim, head.weights.allSatisfy(\.isFinite), head.bias.isFinite else {
            throw HouseholdError(file: "personal head", path: "", problem: "is not \(PersonalHead.window) frames of \(bank.dim) finite numbers")
        }
        guard let i = phrases.firstIndex(where: { Self.same($0.text, text) }), !phrases[i].templates.isEmpty else {
            throw NotLearned.notEnrolled
        }
        phrases[i].heads = (phrases[i].heads ?? []) + [Head(weights: head.weights, bias: head.bias, added: now,
                                                             bankSHA256: bank.sha256, takes: takes)]
    }

    /// Adds a take of `text` as a template measured against `bank`. The take must be like the takes of its own
    /// enrollment session (one person, one sitting): the phrase's templates from index `sessionStart` on, those
    /// added earlier in the session. The best z of those over the take's frames must reach the bank's threshold, or
    /// it is refused (`TakeProblem.unlikeTheOthers`). Templates from before the session are other sittings, often
    /// other people, and are not compared (a household's second voice must not be refused for being another
    /// voice). `sessionStart` 0 compares with all; nil compares with none (takes already checked in their session).
    public mutating func add(_ take: EnrolledTake, phrase text: String, bank: NegativeBank, now: Date = Date(),
                             sessionStart: Int? = 0) throws {
        if let problem = PhraseText.problem(text) {
            throw HouseholdError(file: "household", path: "", problem: "cannot keep the phrase: its words \(problem)")
        }
        try check(dim: bank.dim)
        let existing = sessionStart.map { Array((phrase(text)?.templates ?? []).dropFirst($0)) } ?? []
        if !existing.isEmpty {
            let best = Self.bestMatch(of: existing, over: take.frames, bank: bank).z
            guard best >= bank.zThreshold else { throw TakeProblem.unlikeTheOthers(z: best, needed: bank.zThreshold) }
        }
        let (mu, sd) = try bank.measure(template: take.template)
        let template = Template(embeddings: take.template, mu: mu, sd: sd, added: now, bankSHA256: bank.sha256)
        if let i = phrases.firstIndex(where: { Self.same($0.text, text) }) {
            phrases[i].templates.append(template)
        } else {
            phrases.append(Phrase(text: text.trimmed(), templates: [template]))
        }
    }

    /// Keeps a false wake's frames (the last min(24, 2 x longest template + 1) of `frames`: a template's path
    /// spans at most twice its length, a slower saying, and the wake comes a step after the path's peak,
    /// FusedDetector.peakWaitSteps; with a personal head, at least its window and the step after it), the newest 64.
    public mutating func addNegative(_ frames: [[Float]], now: Date = Date()) {
        var longest = phrases.flatMap(\.templates).map(\.embeddings.count).max().map { 2 * $0 + 1 } ?? Enrollment.maxFrames
        if phrases.contains(where: { !($0.heads ?? []).isEmpty }) { longest = max(longest, PersonalHead.window + 1) }
        negatives.append(Negative(embeddings: Array(frames.suffix(min(Enrollment.maxFrames, longest))), added: now))
        if negatives.count > Self.negativesKept { negatives.removeFirst(negatives.count - Self.negativesKept) }
    }

    /// Why `learn` kept nothing.
    public enum NotLearned: Error, Equatable, CustomStringConvertible {
        /// The phrase has no enrolled takes: the household learns only phrases a person taught it.
        case notEnrolled
        /// The phrase's templates did not hear it in the wake's frames themselves (the generic model woke alone).
        case templatesDidNotHear(z: Double, needed: Double)
        /// The part of the frames that matched is too short or too long for a template.
        case matchSize(frames: Int)

        public var description: String {
            switch self {
            case .notEnrolled: "the phrase has no enrolled takes"
            case .templatesDidNotHear(let z, let needed):
                "its templates did not hear it (best z \((z * 100).rounded() / 100), needed \((needed * 100).rounded() / 100))"
            case .matchSize(let frames): "the match is \(frames) frames (a template is \(Enrollment.minFrames) to \(Enrollment.maxFrames))"
            }
        }
    }

    /// Strengthens the enrollment of `text` with an answered wake (docs/household.md, "Answered wakes"): `frames`
    /// are the raw embedding frames heard up to the wake. The phrase's enrolled takes are run over them; where the
    /// best z reaches `zThreshold`, the frames its path covered become a learned template (measured against
    /// `bank`), and the phrase keeps its newest `learnedKept` learned templates. Returns the frames kept.
    /// Only the takes cut what is learned: a learned template (which hears itself best) would cut the next one
    /// shorter and shorter, and a wake only learned templates heard would teach more of the same (BENCHMARKS.md,
    /// "answered wakes learned in the household's own room": at equal false accepts this misses fewer than learning
    /// through all templates).
    @discardableResult
    public mutating func learn(from frames: [[Float]], phrase text: String, bank: NegativeBank, zThreshold: Double,
                               now: Date = Date()) throws -> Int {
        try check(dim: bank.dim)
        guard frames.allSatisfy({ $0.count == bank.dim }) else {
            throw HouseholdError(file: "answered wake", path: "", problem: "has frames that are not \(bank.dim) numbers each")
        }
        guard let p = phrases.firstIndex(where: { Self.same($0.text, text) }) else { throw NotLearned.notEnrolled }
        let takes = phrases[p].templates.filter { !$0.isLearned }
        guard !takes.isEmpty else { throw NotLearned.notEnrolled }
        let best = Self.bestMatch(of: takes, over: frames, bank: bank)
        guard best.z >= zThreshold else { throw NotLearned.templatesDidNotHear(z: best.z, needed: zThreshold) }
        let cut = Array(frames[best.start...best.end])
        guard (Enrollment.minFrames...Enrollment.maxFrames).contains(cut.count) else { throw NotLearned.matchSize(frames: cut.count) }
        let (mu, sd) = try bank.measure(template: cut)
        phrases[p].templates.append(Template(embeddings: cut, mu: mu, sd: sd, added: now, bankSHA256: bank.sha256, learned: true))
        let learned = phrases[p].templates.indices.filter { phrases[p].templates[$0].isLearned }
        if learned.count > Self.learnedKept {
            let drop = Set(learned.prefix(learned.count - Self.learnedKept))
            phrases[p].templates = phrases[p].templates.enumerated().filter { !drop.contains($0.offset) }.map(\.element)
        }
        return cut.count
    }

    /// The best z of `templates` over `frames` (raw embeddings, run as one stream), and the frames its path
    /// covered (`start...end`): what "unlike the others" and an answered wake both ask.
    static func bestMatch(of templates: [Template], over frames: [[Float]], bank: NegativeBank) -> (z: Double, start: Int, end: Int) {
        let normalised = bank.normalised(frames)
        var best = (z: -Double.infinity, start: 0, end: 0)
        for template in templates {
            let dtw = SubsequenceDTW(template: bank.normalised(template.embeddings), dim: bank.dim)
            normalised.withUnsafeBufferPointer { f in
                for k in 0..<frames.count {
                    let z = Self.z(score: dtw.push(f.baseAddress! + k * bank.dim), mu: template.mu, sd: template.sd)
                    if z > best.z { best = (z, dtw.lastStart, k) }
                }
            }
        }
        return best
    }

    /// `z_T = (mu_T - score) / max(sd_T, 1e-6)`; -inf where no path exists yet.
    static func z(score: Float, mu: Double, sd: Double) -> Double {
        score.isFinite ? (mu - Double(score)) / max(sd, 1e-6) : -.infinity
    }

    /// Measures again every template whose mu and sd came from another bank (a new package); true if any did.
    public mutating func remeasure(bank: NegativeBank) throws -> Bool {
        var changed = false
        var windows: WindowRows?  // the bank's windows, made once, when a head needs them
        for p in phrases.indices {
            for t in phrases[p].templates.indices where phrases[p].templates[t].bankSHA256 != bank.sha256 {
                let (mu, sd) = try bank.measure(template: phrases[p].templates[t].embeddings)
                phrases[p].templates[t].mu = mu
                phrases[p].templates[t].sd = sd
                phrases[p].templates[t].bankSHA256 = bank.sha256
                changed = true
            }
            guard let heads = phrases[p].heads, heads.contains(where: { $0.bankSHA256 != bank.sha256 }) else { continue }
            // A head's z is affine in its inputs, and another bank's mean moves them by a constant: scaled again
            // against the new bank's windows, it is a z against them as it was against the old.
            if windows == nil { windows = PersonalHead.negatives(bank: bank) }
            let windows = windows!
            for h in heads.indices where heads[h].bankSHA256 != bank.sha256 {
                guard heads[h].weights.count == windows.width, windows.count > 0 else { continue }
                let scaled = heads[h].head.rescaled(against: windows)
                phrases[p].heads![h].weights = scaled.weights
                phrases[p].heads![h].bias = scaled.bias
                phrases[p].heads![h].bankSHA256 = bank.sha256
                changed = true
            }
        }
        return changed
    }

    /// The household in `path`, nil when there is none yet; a file that cannot be read or is damaged is an
    /// error naming it (never silently an empty household, which the next save would write over).
    /// The household in `path` (empty when there is none) with its templates measured against `bank`: what an
    /// enrollment adds to.
    public static func loadMeasured(path: String, bank: NegativeBank) throws -> Household {
        var household = try load(path: path) ?? Household()
        _ = try household.remeasure(bank: bank)
        return household
    }

    public static func load(path: String) throws -> Household? {
        func fail(_ problem: String) -> HouseholdError { HouseholdError(file: "household file", path: path, problem: problem) }
        let bytes: [UInt8]
        switch AtomicFile.read(path, limit: 64 << 20) {
        case .none: return nil
        case .unreadable(let why): throw fail("cannot be read (\(why))")
        case .bytes(let b): bytes = b
        }
        guard bytes.count <= 64 << 20 else { throw fail("is larger than 64 MB: not a household file") }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let household: Household
        do { household = try decoder.decode(Household.self, from: Data(bytes)) } catch {
            throw fail("is damaged (\(error)); move it away and enroll again")
        }
        guard household.version == 1 else { throw fail("is version \(household.version); this build reads version 1") }
        guard household.negatives.allSatisfy({ !$0.embeddings.isEmpty && $0.embeddings.allSatisfy { $0.allSatisfy(\.isFinite) } }) else {
            throw fail("is damaged (a household negative has no frames, or numbers that are not); move it away and enroll again")
        }
        for p in household.phrases {
            if let problem = PhraseText.problem(p.text) {
                throw fail("is damaged (a phrase's words \(problem)); move it away and enroll again")
            }
            for (n, t) in p.templates.enumerated() {
                // A template's score is a mean distance between unit vectors, 1 - a . b: its mean over the bank lies in
                // 0...2 and its spread in (0, 1]. A number outside (a damaged digit) would shift every z it gives.
                let which = "template \(n + 1) of \"\(p.text)\""
                let problem: String? =
                    if !(Enrollment.minFrames...Enrollment.maxFrames).contains(t.embeddings.count) {
                        "\(which) has \(t.embeddings.count) frames, not \(Enrollment.minFrames)-\(Enrollment.maxFrames)"
                    } else if !t.embeddings.allSatisfy({ $0.count == t.embeddings[0].count && $0.allSatisfy(\.isFinite) }) {
                        "\(which) has frames of different sizes, or numbers that are not"
                    } else if !(0...2).contains(t.mu) {
                        "\(which) has mu \(t.mu), outside 0...2"
                    } else if !(t.sd > 0 && t.sd <= 1) {
                        "\(which) has sd \(t.sd), outside (0, 1]"
                    } else { nil }
                if let problem { throw fail("is damaged (\(problem)); move it away and enroll again") }
            }
            for h in p.heads ?? [] {
                guard !h.weights.isEmpty, h.weights.count % PersonalHead.window == 0, h.weights.allSatisfy(\.isFinite),
                      h.bias.isFinite, h.takes >= 0
                else { throw fail("is damaged (a personal head of \"\(p.text)\" has the wrong size or numbers); move it away and enroll again") }
            }
        }
        return household
    }

    /// Reads household.json at `path` (measured against `bank`), lets `edit` change it and writes it back if it
    /// changed, all under the file's lock (`AtomicFile.whileLocked`): every writer of the household goes through here,
    /// so none writes over a change another made meanwhile (a forget stays forgotten, a kept take stays kept).
    /// Returns the household as it is now.
    @discardableResult
    public static func update(path: String, bank: NegativeBank?, _ edit: (inout Household) throws -> Void) throws -> Household {
        try AtomicFile.whileLocked(path) {
            var household = try load(path: path) ?? Household()
            let remeasured = try bank.map { try household.remeasure(bank: $0) } ?? false
            let before = household
            try edit(&household)
            if remeasured || household != before { try household.save(path: path) }
            return household
        }
    }

    /// Writes the household to `path` atomically, mode 0600.
    public func save(path: String) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        let bytes = [UInt8](try encoder.encode(self))
        do throws(AtomicFile.Failure) { try AtomicFile.write(bytes, to: path, mode: 0o600) } catch {
            throw HouseholdError(file: "household file", path: path, problem: "cannot be written (\(error.reason))")
        }
    }
}
