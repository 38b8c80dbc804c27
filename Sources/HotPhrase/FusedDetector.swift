/// A wake: which phrase, when (seconds of audio consumed), and its score: the generic model's smoothed
/// probability when it woke, the personal z-score when the household's templates or personal heads did (a head's
/// z less `PersonalHead.offset`, on the templates' scale).
public struct WakeDetection: Sendable, Equatable {
    public let time: Double
    public let score: Double
    public let phrase: String
    /// True when the templates or a personal head woke it, false when the generic model did.
    public let personal: Bool
    /// The household's stop phrase (only while `FusedDetector.stopOver` is set): not a wake but a stop.
    public let stop: Bool
}

/// The speaker's detector with a household (docs/household.md, "Fusion and the household's negatives"): the
/// generic model, and over the same embedding frames one subsequence DTW per enrolled template and the phrases'
/// personal heads ("The personal head"). The model's own phrase wakes when either does; a phrase of the owner's
/// choosing by its templates and heads alone; one refractory period for all. Like HotPhraseDetector it belongs to one stream and one thread, and allocates nothing per call: a
/// listener that drives a HotPhraseDetector can drive this instead.
public final class FusedDetector {
    public let generic: HotPhraseDetector
    public var model: HotPhraseModel { generic.model }
    /// The generic model's threshold (0...1); may be changed between calls, as HotPhraseDetector's.
    public var threshold: Double {
        get { generic.threshold }
        set { generic.threshold = newValue }
    }
    /// The z the personal scores must reach (from the bank and the sensitivity); may be changed between calls.
    public var zThreshold: Double
    /// What the speaker plays (nil: nothing): while it rings or speaks the household's stop phrase and the stop
    /// word count, the stop word at its threshold for that sound. May be changed between calls. Their templates and
    /// head follow the audio either way, so they are heard as soon as armed.
    public var stopOver: StopWord.Over? = nil
    /// The stop word for everyone (StopWord), on the same embedding frames: fused with the household's stop
    /// phrase, either stops the speaker, one refractory period for both. Set on the detector's thread.
    public var stopWord: StopWord?

    private struct TemplateState {
        let dtw: SubsequenceDTW
        let mu: Double
        let sd: Double
        /// The best z_T over each household negative, + 0.5: the threshold never goes below the largest.
        let negativeFloor: Double
    }

    /// A personal head: its z over the last `PersonalHead.window` normalised frames is held to `zThreshold` +
    /// `PersonalHead.offset`, and to its own best over each household negative + 0.5.
    private struct HeadState {
        let weights: [Float]
        let bias: Double
        let negativeFloor: Double
    }

    private struct PhraseState {
        let text: String
        let isModelPhrase: Bool
        let isStop: Bool
        let templates: [TemplateState]
        let heads: [HeadState]
    }

    private let phrases: [PhraseState]
    /// The bank's mean (not the bank: its frames are only for measuring templates).
    private let mean: UnsafeMutablePointer<Float>
    private let dim: Int
    /// The newest frame, normalised.
    private let frame: UnsafeMutablePointer<Float>
    /// The last `PersonalHead.window` normalised frames (ring; `windowNext` is the oldest once it is full), what
    /// the heads score.
    private let window: UnsafeMutablePointer<Float>
    private var windowNext = 0
    private var windowCount = 0
    /// The household negatives heard as sounds, for the generic wake rule: each one's frames run as a template
    /// over the stream (subsequence DTW, z against the bank as a take's), so that the same sound is found again on
    /// any offset of the step grid and however the phrase's templates score it.
    private struct NegativeState {
        let dtw: SubsequenceDTW
        let mu: Double
        let sd: Double
    }
    private let negatives: [NegativeState]
    /// Until this sample a generic wake is near a negative: one was heard (its z reached `zThreshold`) within
    /// the last `negativeSteps` steps.
    private var nearNegativeUntil = Int.min
    private let nearNegativeSamples: Int
    /// A negative heard within this many steps of a generic wake makes the wake a sound like it.
    static let negativeSteps = 3
    /// Per household negative: the best DTW score of the model phrase's templates over it (empty without them),
    /// and theirs on the newest frame: a generic wake the phrase's templates score like a kept false wake is one
    /// like it too (a sound the phrase's templates hear as much, not only the same sound).
    private let negativeScores: [Float]
    private var modelPhraseScore = Float.infinity
    private let refractorySamples: Int
    private var deafUntil = Int.min
    /// Until this sample the generic model is deaf: it heard a sound like a kept negative, and the rest of that
    /// sound must not wake the speaker either. The templates are not: a wake of theirs waiting for its peak stays.
    private var genericDeafUntil = Int.min
    /// A personal wake waits for its match's peak, at most this many embedding steps (80 ms each) after its
    /// templates first reach their threshold: the z of a match keeps rising for a step or more after it first
    /// crosses, and the frames kept for a false wake must hold the peak, or the same sound heard again reaches a
    /// higher z than its household negative did and wakes the speaker again (docs/household.md). The stop phrase
    /// does not wait.
    public static let peakWaitSteps = 6
    /// The personal wake waiting for its peak: its phrase, the best z so far, steps waited.
    private var pending: (phrase: Int, z: Double, steps: Int)?
    /// The sample of the newest embedding step (for `finish`).
    private var lastSample = 0
    /// The last `Enrollment.maxFrames` raw frames (ring), and their copy at the latest wake, oldest first: what
    /// the speaker keeps as a household negative when that wake turns out false (docs/household.md).
    private let raw: UnsafeMutablePointer<Float>
    private var rawNext = 0
    private var rawCount = 0
    private let wakeRaw: UnsafeMutablePointer<Float>
    private var wakeCount = 0
    /// The phrase of the latest wake (nil before the first): what an answered wake teaches (Household.learn).
    public private(set) var phraseAtLastWake: String?

    /// What a household makes of the bank, measured once (every template's DTW over every household negative):
    /// the slow part of making a detector, done off the detector's thread (HotPhraseListener) and handed to it
    /// whole, as plain values, for `init(model:plan:...)` there.
    public struct Plan: Sendable {
        struct Template: Sendable {
            let frames: [Float]
            let mu: Double
            let sd: Double
            let negativeFloor: Double
        }
        struct Head: Sendable {
            let weights: [Float]
            let bias: Double
            let negativeFloor: Double
        }
        struct Phrase: Sendable {
            let text: String
            let isModelPhrase: Bool
            let isStop: Bool
            let templates: [Template]
            let heads: [Head]
        }
        let phrases: [Phrase]
        /// Each household negative's frames, normalised, with its mu and sd against the bank.
        let negatives: [(frames: [Float], mu: Double, sd: Double)]
        let negativeScores: [Float]
        let mean: [Float]
        let dim: Int
        let zThreshold: Double
        /// Whether the household has any template (what the listener reports as the personal scorer running).
        public var hasTemplates: Bool { !phrases.isEmpty }
        /// The personal heads scored (those scaled against another bank than this one are not).
        public var headCount: Int { phrases.reduce(0) { $0 + $1.heads.count } }

        /// Throws if the household has templates and the model has no embedding, or the embeddings' sizes disagree.
        public init(model: HotPhraseModel, household: Household, bank: NegativeBank) throws {
            let hasTemplates = household.phrases.contains { !$0.templates.isEmpty }
            if hasTemplates || !household.negatives.isEmpty {
                guard case .embedding(let m) = model.network else { throw Enrollment.needsEmbedding(model) }
                guard m.dim == bank.dim else {
                    throw HouseholdError(file: "negative bank", path: bank.path,
                                         problem: "holds \(bank.dim)-number embeddings; the model \(model.path) makes \(m.dim)")
                }
            }
            try household.check(dim: bank.dim)
            let normalisedNegatives = household.negatives.map { bank.normalised($0.embeddings) }
            var phrases: [Phrase] = []
            var modelPhraseTemplates: [SubsequenceDTW] = []
            for p in household.phrases where !p.templates.isEmpty {
                var templates: [Template] = []
                let isModelPhrase = Household.same(p.text, model.phrase)
                for t in p.templates {
                    let frames = bank.normalised(t.embeddings)
                    let dtw = SubsequenceDTW(template: frames, dim: bank.dim)
                    var floor = -Double.infinity
                    for n in normalisedNegatives {
                        let end = FusedDetector.run(dtw, over: n, dim: bank.dim)
                        floor = max(floor, Household.z(score: end, mu: t.mu, sd: t.sd) + 0.5)
                    }
                    templates.append(Template(frames: frames, mu: t.mu, sd: t.sd, negativeFloor: floor))
                    if isModelPhrase && !phrases.contains(where: \.isModelPhrase) { modelPhraseTemplates.append(dtw) }
                }
                var heads: [Head] = []
                for h in p.heads ?? [] where h.bankSHA256 == bank.sha256 && h.weights.count == PersonalHead.window * bank.dim {
                    var floor = -Double.infinity
                    for n in normalisedNegatives {
                        var rows = WindowRows(width: h.weights.count)
                        rows.appendWindows(of: n, dim: bank.dim, frames: PersonalHead.window)
                        rows.withRows { base, starts in
                            for start in starts { floor = max(floor, h.head.z(base + start) + 0.5) }
                        }
                    }
                    heads.append(Head(weights: h.weights, bias: h.bias, negativeFloor: floor))
                }
                phrases.append(Phrase(text: p.text, isModelPhrase: isModelPhrase, isStop: Household.isStopPhrase(p.text),
                                      templates: templates, heads: heads))
            }
            self.phrases = phrases
            negativeScores = modelPhraseTemplates.isEmpty ? [] : normalisedNegatives.map { n in
                modelPhraseTemplates.map { FusedDetector.run($0, over: n, dim: bank.dim) }.min() ?? .infinity
            }
            // heard as sounds: those of at least a template's shortest length (fewer frames match almost anything)
            negatives = try zip(household.negatives, normalisedNegatives).filter { $0.0.embeddings.count >= Enrollment.minFrames }.map { n, frames in
                let (mu, sd) = try bank.measure(template: n.embeddings)
                return (frames, mu, sd)
            }
            mean = bank.mean
            dim = bank.dim
            zThreshold = bank.zThreshold
        }
    }

    /// `threshold` nil uses the model's own; `zThreshold` nil the bank's at sensitivity 0.5. Throws if the
    /// household has templates and the model has no embedding, or the embeddings' sizes disagree.
    public convenience init(model: HotPhraseModel, household: Household, bank: NegativeBank, threshold: Double? = nil,
                            zThreshold: Double? = nil, refractorySeconds: Double? = nil) throws {
        self.init(model: model, plan: try Plan(model: model, household: household, bank: bank), threshold: threshold,
                  zThreshold: zThreshold, refractorySeconds: refractorySeconds)
    }

    /// A detector for a household measured already (`Plan`): allocates its buffers and nothing else.
    public init(model: HotPhraseModel, plan: Plan, threshold: Double? = nil, zThreshold: Double? = nil,
                refractorySeconds: Double? = nil) {
        // The generic detector's own refractory period is one step: this one's is shared with the templates.
        generic = HotPhraseDetector(model: model, threshold: threshold, refractorySeconds: 0)
        self.zThreshold = zThreshold ?? plan.zThreshold
        dim = plan.dim
        phrases = plan.phrases.map { p in
            PhraseState(text: p.text, isModelPhrase: p.isModelPhrase, isStop: p.isStop, templates: p.templates.map { t in
                TemplateState(dtw: SubsequenceDTW(template: t.frames, dim: plan.dim), mu: t.mu, sd: t.sd, negativeFloor: t.negativeFloor)
            }, heads: p.heads.map { HeadState(weights: $0.weights, bias: $0.bias, negativeFloor: $0.negativeFloor) })
        }
        negatives = plan.negatives.map { n in NegativeState(dtw: SubsequenceDTW(template: n.frames, dim: plan.dim), mu: n.mu, sd: n.sd) }
        negativeScores = plan.negativeScores
        frame = .allocate(capacity: dim)
        frame.initialize(repeating: 0, count: dim)
        window = .allocate(capacity: PersonalHead.window * dim)
        window.initialize(repeating: 0, count: PersonalHead.window * dim)
        mean = .allocate(capacity: dim)
        mean.initialize(from: plan.mean, count: dim)
        raw = .allocate(capacity: Enrollment.maxFrames * dim)
        raw.initialize(repeating: 0, count: Enrollment.maxFrames * dim)
        wakeRaw = .allocate(capacity: Enrollment.maxFrames * dim)
        wakeRaw.initialize(repeating: 0, count: Enrollment.maxFrames * dim)
        let steps = max(1, Int(((refractorySeconds ?? model.refractorySeconds) / model.stepSeconds).rounded()))
        refractorySamples = Int((Double(steps) * model.stepSeconds * Double(model.sampleRate)).rounded())
        nearNegativeSamples = Int((Double(Self.negativeSteps) * model.stepSeconds * Double(model.sampleRate)).rounded())
    }

    deinit {
        frame.deallocate()
        window.deallocate()
        mean.deallocate()
        raw.deallocate()
        wakeRaw.deallocate()
    }

    /// The raw embedding frames heard up to the latest wake (at most `Enrollment.maxFrames`, oldest first; none
    /// before the first wake; kept across `reset`). Allocates: read once per wake, not per frame.
    public var framesAtLastWake: [[Float]] {
        (0..<wakeCount).map { k in Array(UnsafeBufferPointer(start: wakeRaw + k * dim, count: dim)) }
    }

    /// Copies the raw ring, oldest first, to `wakeRaw` (no allocation: it runs within `process`; the phrase is
    /// one of the detector's own strings).
    private func keepWakeFrames(_ phrase: String) {
        phraseAtLastWake = phrase
        let size = Enrollment.maxFrames
        for k in 0..<rawCount {
            let slot = ((rawNext - rawCount + k) % size + size) % size
            (wakeRaw + k * dim).update(from: raw + slot * dim, count: dim)
        }
        wakeCount = rawCount
    }

    /// The best (lowest) score of `dtw` over `frames` (normalised rows) run as a stream from reset: its z is
    /// the template's best z over a household negative (as the reference, household.negative_threshold).
    static func run(_ dtw: SubsequenceDTW, over frames: [Float], dim: Int) -> Float {
        dtw.reset()
        var best = Float.infinity
        frames.withUnsafeBufferPointer { f in
            for k in 0..<(frames.count / dim) { best = min(best, dtw.push(f.baseAddress! + k * dim)) }
        }
        return best
    }

    /// The phrases with templates, as enrolled.
    public var personalPhrases: [String] { phrases.map(\.text) }
    /// The personal heads scored beside the templates.
    public var headCount: Int { phrases.reduce(0) { $0 + $1.heads.count } }

    /// Forgets everything heard (as HotPhraseDetector.reset).
    public func reset() {
        generic.reset()
        stopWord?.reset()
        for p in phrases { for t in p.templates { t.dtw.reset() } }
        for n in negatives { n.dtw.reset() }
        nearNegativeUntil = .min
        modelPhraseScore = .infinity
        deafUntil = .min
        genericDeafUntil = .min
        pending = nil
        lastSample = 0
        rawCount = 0
        rawNext = 0
        windowCount = 0
        windowNext = 0
        // The latest wake's frames stay: the listener is reset (our own earcon) before the loop says that wake
        // was false (FalseWake), and the next wake replaces them.
    }

    /// Feeds samples; calls `onDetection` for each wake they complete.
    public func process(_ samples: UnsafeBufferPointer<Int16>, onDetection: (WakeDetection) -> Void) {
        let rate = Double(model.sampleRate)
        generic.process(samples, onFrame: { e, sample in
            personal(e, sample: sample, rate: rate, onDetection: onDetection)
        }, onDetection: { d in
            let sample = Int((d.time * rate).rounded())
            guard sample >= deafUntil, sample >= genericDeafUntil else { return }
            // A sound like a kept false wake is swallowed whole: the generic model is deaf for the refractory
            // period, as after a wake, so the steps after it, where the sound goes on, do not wake the speaker.
            guard !nearNegative(score: d.score, sample: sample) else {
                genericDeafUntil = sample + refractorySamples
                return
            }
            deafUntil = sample + refractorySamples
            keepWakeFrames(model.phrase)
            onDetection(WakeDetection(time: d.time, score: d.score, phrase: model.phrase, personal: false, stop: false))
        })
    }

    /// One embedding frame through every template; a wake for the phrase whose templates pass their thresholds
    /// by the most.
    private func personal(_ e: UnsafeBufferPointer<Float>, sample: Int, rate: Double, onDetection: (WakeDetection) -> Void) {
        guard e.count == dim else { return }
        lastSample = sample
        (raw + rawNext * dim).update(from: e.baseAddress!, count: dim)
        rawNext = (rawNext + 1) % Enrollment.maxFrames
        rawCount = min(rawCount + 1, Enrollment.maxFrames)
        if let stopWord, stopWord.push(e, sample: sample, over: stopOver), sample >= deafUntil {
            // The stop word heard it: a stop, as the household's stop phrase makes one (and no wake waits).
            pending = nil
            deafUntil = sample + refractorySamples
            onDetection(WakeDetection(time: Double(sample) / rate, score: stopWord.score, phrase: stopWord.model.phrase,
                                      personal: false, stop: true))
            return
        }
        guard !phrases.isEmpty || !negatives.isEmpty else { return }
        NegativeBank.normalise(e.baseAddress!, mean: mean, into: frame, dim: dim)
        (window + windowNext * dim).update(from: frame, count: dim)
        windowNext = (windowNext + 1) % PersonalHead.window
        windowCount = min(windowCount + 1, PersonalHead.window)
        for n in negatives where Household.z(score: n.dtw.push(frame), mu: n.mu, sd: n.sd) >= zThreshold {
            nearNegativeUntil = sample + nearNegativeSamples
        }
        var wake: (phrase: Int, z: Double, margin: Double)?
        var pendingZ = -Double.infinity
        for (p, phrase) in phrases.enumerated() {
            var best = -Double.infinity, margin = -Double.infinity, lowest = Float.infinity
            for t in phrase.templates {
                let s = t.dtw.push(frame)
                let z = Household.z(score: s, mu: t.mu, sd: t.sd)
                lowest = min(lowest, s)
                best = max(best, z)
                margin = max(margin, z - max(zThreshold, t.negativeFloor))
            }
            if windowCount == PersonalHead.window {
                for h in phrase.heads {
                    // a head's z on the templates' scale: less the offset it must clear beyond theirs
                    let z = headZ(h)
                    best = max(best, z - PersonalHead.offset)
                    margin = max(margin, z - max(zThreshold + PersonalHead.offset, h.negativeFloor))
                }
            }
            if phrase.isModelPhrase { modelPhraseScore = lowest }
            if p == pending?.phrase { pendingZ = best }
            if phrase.isStop && stopOver == nil { continue }
            if margin >= 0, margin > wake?.margin ?? -.infinity { wake = (p, best, margin) }
        }
        // deaf: a generic wake came first (it set the refractory period), and a pending wake is that wake
        guard sample >= deafUntil else { pending = nil; return }
        if let wake, phrases[wake.phrase].isStop {
            // A stop is no wake and waits for nothing: the frames kept for a false wake stay those of the last wake.
            pending = nil
            deafUntil = sample + refractorySamples
            stopWord?.deafen(until: deafUntil)
            onDetection(WakeDetection(time: Double(sample) / rate, score: wake.z, phrase: phrases[wake.phrase].text, personal: true, stop: true))
            return
        }
        if var waiting = pending {
            waiting.steps += 1
            if pendingZ > waiting.z && waiting.steps < Self.peakWaitSteps {
                waiting.z = pendingZ
                pending = waiting
                return
            }
            pending = nil
            fire(waiting.phrase, z: max(waiting.z, pendingZ), sample: sample, rate: rate, onDetection: onDetection)
        } else if let wake {
            if Self.peakWaitSteps > 0 {
                pending = (wake.phrase, wake.z, 0)
            } else {
                fire(wake.phrase, z: wake.z, sample: sample, rate: rate, onDetection: onDetection)
            }
        }
    }

    /// `head`'s z over the window ring, the oldest frame first (the ring starts at `windowNext` once it is full).
    private func headZ(_ head: HeadState) -> Double {
        let split = (PersonalHead.window - windowNext) * dim
        return head.weights.withUnsafeBufferPointer { w in
            Double(dot(window + windowNext * dim, w.baseAddress!, split)
                   + dot(window, w.baseAddress! + split, windowNext * dim)) + head.bias
        }
    }

    /// The input has ended (a file, not the microphone): a personal wake still waiting for its peak comes now, at
    /// the last step heard, rather than never.
    public func finish(onDetection: (WakeDetection) -> Void) {
        guard let waiting = pending else { return }
        pending = nil
        fire(waiting.phrase, z: waiting.z, sample: lastSample, rate: Double(model.sampleRate), onDetection: onDetection)
    }

    /// A personal wake at `sample`, with the frames heard up to it kept for `framesAtLastWake`.
    private func fire(_ phrase: Int, z: Double, sample: Int, rate: Double, onDetection: (WakeDetection) -> Void) {
        deafUntil = sample + refractorySamples
        keepWakeFrames(phrases[phrase].text)
        onDetection(WakeDetection(time: Double(sample) / rate, score: z, phrase: phrases[phrase].text, personal: true, stop: false))
    }

    /// Whether a generic wake with `score` at `sample` is like a kept household negative and does not reach the
    /// stricter threshold there (1 - (1 - threshold) / 4): a negative was heard as a sound within the last
    /// `negativeSteps` steps, or the model phrase's templates score this step within 0.05 of a negative.
    private func nearNegative(score: Double, sample: Int) -> Bool {
        guard score <= 1 - (1 - threshold) / 4 else { return false }
        return sample <= nearNegativeUntil || negativeScores.contains { abs($0 - modelPhraseScore) <= 0.05 }
    }
}
