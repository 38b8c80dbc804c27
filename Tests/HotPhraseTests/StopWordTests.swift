import Audio
import AudioCore
import Foundation
@testable import HotPhrase
import Testing
import TestSupport

/// The stop word for everyone (issue #61): a format-2 head (`hotphrase.train_stop`) on the hot-phrase model's
/// embedding frames, fused with the household's stop phrase.
enum StopWordFixtures {
    static let generic = Fixtures.root.appendingPathComponent("share/hotphrase/ok-hound.hpm").path
    /// The trained stop word: shipped (share/hotphrase/stop.hpm) or, where the tooling ran, its export
    /// (tools/hotphrase/README.md, "The stop word"); nil when neither is there.
    static let trained: String? = [Fixtures.root.appendingPathComponent("share/hotphrase/stop.hpm").path,
                                   Fixtures.root.appendingPathComponent("tools/hotphrase/work/stop/stop.hpm").path]
        .first { FileManager.default.fileExists(atPath: $0) }
    static let noTrained = "no trained stop word: neither the shipped share/hotphrase/stop.hpm nor tools/hotphrase/work/stop/stop.hpm, which the tooling makes (tools/hotphrase/README.md, \"The stop word\")"
    /// The held-out speakers' real "stop" clips as the tooling writes them (`hotphrase.get_stop_clips`): never
    /// committed, so present only where the tooling ran.
    static let realDir = Fixtures.root.appendingPathComponent("tools/hotphrase/work/stop-real/eval/stop")
    static let realClips: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: realDir.path)) ?? [])
        .filter { $0.hasSuffix(".flac") }.sorted().map { realDir.appendingPathComponent($0).path }
    static let noReal = "no held-out real clips: tools/hotphrase/work/stop-real is made by hotphrase.get_stop_clips (tools/hotphrase/README.md, \"The stop word\")"
    static let ring = Fixtures.root.appendingPathComponent("share/earcons/timer.wav").path

    /// Where a StopWord riding on `generic`'s frames fires over `samples` (seconds), fed in 20 ms pieces.
    static func stops(_ stop: StopWord, _ generic: HotPhraseDetector, _ samples: [Int16], over: StopWord.Over? = .answer) -> [Double] {
        var found: [Double] = []
        samples.withUnsafeBufferPointer { all in
            var i = 0
            while i < all.count {
                generic.process(UnsafeBufferPointer(rebasing: all[i..<min(i + 320, all.count)]), onFrame: { e, sample in
                    if stop.push(e, sample: sample, over: over) { found.append(Double(sample) / 16_000) }
                }, onDetection: { _ in })
                i += 320
            }
        }
        return found
    }

    /// A clip with a second of faint noise before and after (the embedding needs 0.8 s of audio first).
    static func padded(_ clip: [Int16], seed: UInt64) -> [Int16] {
        var rng = SplitMix(seed: seed)
        let quiet = (0..<16_000).map { _ in Int16(rng.unit() * 20 - 10) }
        return quiet + clip + quiet
    }
}

/// The plumbing, with the embedding fixtures' random head standing in for a trained stop word (its speech
/// embedding is the shipped model's): what it hears is the random head's peak on a clip, not "stop".
@Suite(.ownThread) struct StopWordTests {
    static let clip = try! EmbeddingFixtures.samples("ok-hound-silence.flac")
    /// Just under the random head's peak on the clip: it fires once there.
    static let threshold: Double = {
        let d = HotPhraseDetector(model: try! EmbeddingFixtures.model(), threshold: 2)
        var peak = 0.0
        d.stepObserver = { peak = max(peak, $0) }
        clip.withUnsafeBufferPointer { d.process($0) { _ in } }
        return peak - 1e-4
    }()

    static func models() throws -> (stop: HotPhraseModel, generic: HotPhraseModel) {
        (try EmbeddingFixtures.model(), try HotPhraseModel.load(path: StopWordFixtures.generic))
    }

    @Test func itRunsOnTheShippedModelsFramesAndNotOnFormat1() throws {
        let (stopModel, generic) = try Self.models()
        let stop = try StopWord(model: stopModel, generic: generic)
        #expect(stop.threshold == stopModel.defaultThreshold)
        let v9 = try HotPhraseModel.load(path: Fixtures.dir.appendingPathComponent("ok-hound-v9.hpm").path)
        #expect { try StopWord(model: stopModel, generic: v9) } throws: { "\($0)".contains("format 1") }
        #expect { try StopWord(model: v9, generic: generic) } throws: { "\($0)".contains("format-2") }
    }

    /// Riding on the generic model's frames gives what the stop model's own detector gives alone, number for
    /// number: the same embedding, so no second embedding network is needed.
    @Test func itsScoresAreItsOwnDetectorsOnTheGenericFrames() throws {
        let (stopModel, generic) = try Self.models()
        let stop = try StopWord(model: stopModel, generic: generic)
        let alone = HotPhraseDetector(model: stopModel, threshold: 2)
        var expected: [Double] = []
        alone.stepObserver = { expected.append($0) }
        Self.clip.withUnsafeBufferPointer { alone.process($0) { _ in } }
        let riding = HotPhraseDetector(model: generic, threshold: 2)
        var got: [Double] = []
        Self.clip.withUnsafeBufferPointer { all in
            riding.process(all, onFrame: { e, sample in
                let before = stop.steps
                _ = stop.push(e, sample: sample, over: nil)
                if stop.steps > before { got.append(stop.score) }
            }, onDetection: { _ in })
        }
        #expect(!got.isEmpty && got.count == expected.count)
        #expect(zip(got, expected).allSatisfy { abs($0 - $1) < 1e-9 }, "\(got.prefix(3)) \(expected.prefix(3))")
    }

    /// Heard only while armed (the speaker rings or speaks), once per refractory period, and a reset forgets.
    @Test func armedOnlyOnceAndReset() throws {
        let (stopModel, generic) = try Self.models()
        let stop = try StopWord(model: stopModel, generic: generic, threshold: Self.threshold)
        #expect(StopWordFixtures.stops(stop, HotPhraseDetector(model: generic, threshold: 2), Self.clip, over: nil).isEmpty)
        stop.reset()
        #expect(StopWordFixtures.stops(stop, HotPhraseDetector(model: generic, threshold: 2), Self.clip).count == 1)
        stop.reset()
        // twice in a row, closer than the refractory period (2 s) only if the clip is shorter than it
        let twice = StopWordFixtures.stops(stop, HotPhraseDetector(model: generic, threshold: 2), Self.clip + Self.clip)
        #expect(twice.count == 2 && twice[1] - twice[0] >= stopModel.refractorySeconds, "\(twice)")
    }

    /// Over a ring it listens at the ring's threshold (the model file's `ring_threshold`), over an answer at the
    /// default one; a file without a ring threshold listens at the default over both.
    @Test func overARingItListensAtTheRingThreshold() throws {
        let (stopModel, generic) = try Self.models()
        #expect(stopModel.ringThreshold == nil)
        #expect(try StopWord(model: stopModel, generic: generic, threshold: 0.7).ringThreshold == 0.7)
        let ringFile = try withHeader(stopModel, replacing: "\"default_threshold\": ", upTo: ",",
                                      with: "\(Self.threshold + 0.01), \"ring_threshold\": \(Self.threshold)")
        let stop = try StopWord(model: ringFile, generic: generic)
        #expect(stop.threshold == Self.threshold + 0.01 && stop.ringThreshold == Self.threshold)
        #expect(StopWordFixtures.stops(stop, HotPhraseDetector(model: generic, threshold: 2), Self.clip, over: .answer).isEmpty)
        stop.reset()
        #expect(StopWordFixtures.stops(stop, HotPhraseDetector(model: generic, threshold: 2), Self.clip, over: .ring).count == 1)
        // Through the fused detector too.
        let bank = try NegativeBank.locate(Fixtures.root.appendingPathComponent("share/hotphrase/negative-bank.hpm").path)
        var household = Household()
        try household.add(try Enrollment.take(try HouseholdFixtures.say("hey kitchen"), model: generic), phrase: "hey kitchen", bank: bank)
        for (over, count) in [(StopWord.Over.answer, 0), (.ring, 1)] {
            let d = try FusedDetector(model: generic, household: household, bank: bank, threshold: 2,
                                      zThreshold: bank.zThreshold(sensitivity: 0.5))
            d.stopWord = try StopWord(model: ringFile, generic: generic)
            d.stopOver = over
            #expect(HouseholdFixtures.wakes(d, Self.clip).filter(\.stop).count == count, "\(over)")
        }
    }

    /// Fused with the household's stop phrase (docs/household.md): either one stops, a stop and not a wake, one
    /// refractory period for both, and neither while the speaker is quiet.
    @Test func eitherTheEnrolledStopOrTheStopWordStops() throws {
        let (stopModel, generic) = try Self.models()
        let bank = try NegativeBank.locate(Fixtures.root.appendingPathComponent("share/hotphrase/negative-bank.hpm").path)
        var household = Household()
        try household.add(try Enrollment.take(try HouseholdFixtures.say("hey kitchen"), model: generic), phrase: "stop", bank: bank)
        let kitchen = try HouseholdFixtures.say("hey kitchen", voice: "en-us", speed: 160)
        let gap = [Int16](repeating: 0, count: 3 * 16_000)
        func run(armed: Bool, stopWord: Bool, _ stream: [Int16]) throws -> [WakeDetection] {
            let d = try FusedDetector(model: generic, household: household, bank: bank, threshold: 2,
                                      zThreshold: bank.zThreshold(sensitivity: 0.5))
            d.stopOver = armed ? .answer : nil
            if stopWord { d.stopWord = try StopWord(model: stopModel, generic: generic, threshold: Self.threshold) }
            return HouseholdFixtures.wakes(d, stream)
        }
        let stream = kitchen + gap + Self.clip + gap
        let both = try run(armed: true, stopWord: true, stream)
        #expect(both.count == 2 && both.allSatisfy(\.stop), "\(both)")
        #expect(both.first?.personal == true && both.first?.phrase == "stop", "the enrolled stop phrase first: \(both)")
        #expect(both.last?.personal == false && both.last?.phrase == stopModel.phrase, "then the stop word: \(both)")
        let enrolledOnly = try run(armed: true, stopWord: false, stream)
        #expect(enrolledOnly.count == 1 && enrolledOnly[0].personal && enrolledOnly[0].stop, "\(enrolledOnly)")
        #expect(try run(armed: false, stopWord: true, stream).isEmpty)
    }
}

/// The trained stop word (tools/hotphrase: `hotphrase.train_stop`) on real people held out of training; read at
/// run time, skipped where the files are not.
@Suite struct TrainedStopWordTests {
    static func models() throws -> (stop: HotPhraseModel, generic: HotPhraseModel) {
        (try HotPhraseModel.load(path: try #require(StopWordFixtures.trained)), try HotPhraseModel.load(path: StopWordFixtures.generic))
    }

    /// The timer's ring, the speaker's own sound it hears most, looped for two minutes at three levels as it plays
    /// (what a canceller still converging passes nearly whole): no stop, at the file's threshold over a ring.
    @Test(.enabled(if: StopWordFixtures.trained != nil, Comment(rawValue: StopWordFixtures.noTrained)))
    func theRingIsNoStop() throws {
        let (stopModel, generic) = try Self.models()
        let ring = try AudioFile.readMono(path: StopWordFixtures.ring).samples
        for gain in [1.0, 0.3, 0.05] {
            var loop: [Int16] = []
            while loop.count < 120 * 16_000 { loop += ring.map { Int16(Double($0) * gain) } }
            let stop = try StopWord(model: stopModel, generic: generic)
            #expect(StopWordFixtures.stops(stop, HotPhraseDetector(model: generic, threshold: 2), loop, over: .ring).isEmpty, "gain \(gain)")
        }
    }

    /// flite saying "stop" (two of its voices) is heard at the file's own threshold, and nothing in flite's answer
    /// without the word; the speaker's own voice (espeak-ng) is no stop even when its answer says the word, as its
    /// own sound (through the canceller and as it plays) taught it. The file as shipped, end to end (flite's voices were among
    /// the training voices, so this is no measurement: BENCHMARKS.md has those).
    @Test(.enabled(if: StopWordFixtures.trained != nil, Comment(rawValue: StopWordFixtures.noTrained)))
    func itHearsStopAtItsOwnThresholdButNotTheSpeakersOwnVoice() throws {
        let (stopModel, generic) = try Self.models()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-stopword-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func stops(_ make: (String) throws -> Void, seed: UInt64) throws -> [Double] {
            let path = "\(dir)/\(seed).wav"
            try make(path)
            let samples = StopWordFixtures.padded(try AudioFile.readMono(path: path, targetRate: 16_000).samples, seed: seed)
            return StopWordFixtures.stops(try StopWord(model: stopModel, generic: generic), HotPhraseDetector(model: generic, threshold: 2), samples)
        }
        for (i, voice) in ["awb", "slt"].enumerated() {
            #expect(try stops({ try fliteWAV("stop", to: $0, voice: voice) }, seed: UInt64(i)).count == 1, "flite \(voice)")
        }
        let answer = "It is seventy two degrees and sunny in Mountain View. Tomorrow will be warmer, with a high of eighty."
        #expect(try stops({ try fliteWAV(answer, to: $0) }, seed: 3).isEmpty)
        let own = "The next bus stop is Main Street. Stop by the bakery on the corner, it opens at seven."
        #expect(try stops({ try espeakWAV(own, to: $0) }, seed: 4).isEmpty)
        #expect(try stops({ try espeakWAV("stop", to: $0) }, seed: 5).isEmpty, "the speaker's own voice saying the word")
    }

    /// Real people held out of training (Speech Commands' test speakers on the eval side of the split), clean, at
    /// 0.8 (below the shipped threshold, 0.9, which its self-stops set; BENCHMARKS.md, "A stop word for everyone
    /// (issue #61)", has the misses there, in the rooms and over the speaker's sound the bars are about): at most
    /// 5 % missed when armed, none heard when not.
    @Test(.enabled(if: StopWordFixtures.trained != nil, Comment(rawValue: StopWordFixtures.noTrained)),
          .enabled(if: !StopWordFixtures.realClips.isEmpty, Comment(rawValue: StopWordFixtures.noReal)))
    func realHeldOutSpeakersAreHeardWhenArmedOnly() throws {
        let (stopModel, generic) = try Self.models()
        var heard = 0, unarmed = 0
        for (i, path) in StopWordFixtures.realClips.enumerated() {
            let clip = StopWordFixtures.padded(try AudioFile.readMono(path: path).samples, seed: UInt64(i))
            let stop = try StopWord(model: stopModel, generic: generic, threshold: 0.8)
            if !StopWordFixtures.stops(stop, HotPhraseDetector(model: generic, threshold: 2), clip).isEmpty { heard += 1 }
            let quiet = try StopWord(model: stopModel, generic: generic, threshold: 0.8)
            unarmed += StopWordFixtures.stops(quiet, HotPhraseDetector(model: generic, threshold: 2), clip, over: nil).count
        }
        let n = StopWordFixtures.realClips.count
        #expect(Double(n - heard) <= 0.05 * Double(n), "\(n - heard) of \(n) missed")
        #expect(unarmed == 0)
    }
}
