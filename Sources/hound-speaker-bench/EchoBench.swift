import Audio
import AudioCore
import Foundation
import Glibc
import Synchronization
import HotPhrase

/// The echo canceller in a simulated room (issue #19): `tools/bench/aec_room` makes the rooms (the speaker's
/// output as played, what the microphone heard, where each "OK Hound" is); this runs the speaker's own canceller
/// (`Audio.EchoCanceller`, speexdsp) and hot-phrase detector over them, 20 ms at a time as the capture thread does,
/// with the output's reference written ahead of the microphone as a device queue would have it.
///
///   swift run -c release hound-speaker-bench aec ROOMSET [--delay-ms N] [--tail-ms N] [--suppress DB,DB] [--noise-suppress DB] [--frame-ms 10|20] [--model FILE]
///       [--detector-input hotphrase|upload]
///       [--sensitivities 0.5,0.3,...] [--only erle|hotphrase|own] [--conditions silence,talk,talk-off,...]
///   (the real "view glass" conditions, with a view-glass model: --conditions silence-realvg,realvg,realvg-off; a set
///   made with --real-dir adds realvg-ring, e.g. the stop word's held-out real clips, issue #61; a stop word whose
///   file has a ring threshold adds an "as shipped" column, and with --only own its self-stops as the speaker counts
///   them: only while it plays, at that threshold over a ring)
///       [--ref-veto X]   a design study: no detection where the same model on what was played scored X or more
///       [--min-steps N]  a design study: a detection needs N steps in a row at the threshold
///   hound-speaker-bench aec ROOMSET --only dump --dump-dir DIR   the canceller's output over the own sound, to train on
enum EchoBench {
    /// A 20 ms frame, and one second, of the speaker's audio.
    static let frameSamples = 20 * SpeakerAudio.samplesPerMS
    static let second = SpeakerAudio.sampleRate
    struct Options {
        var root = ""
        var settings = EchoCancelSettings(enabled: true, delayMS: 8, tailMS: 200)
        var model: String? = nil
        var sensitivities = [0.5, 0.4, 0.3, 0.2]
        var only: String? = nil
        /// The hot-phrase conditions: a folder of the room set, `-off` for the microphone without the canceller.
        var conditions = ["silence", "talk", "talk-off", "ring", "ring-off"]
        /// What the detector hears: the adaptive filter's output as the speaker gives it (`--detector-input
        /// hotphrase`), or the suppressed frames that are uploaded (`upload`), to compare the two (BENCHMARKS.md,
        /// "Echo cancellation: talking over the speaker").
        var detectorHearsFilter = true
        /// A design study (issue #61), not what the speaker does: drop a detection when the same model on what the
        /// speaker played (ref.wav) scored this much or more from 1 s before it to 0.2 s after (the speaker's own
        /// voice saying something like the word); nil: no veto.
        var refVeto: Double? = nil
        /// Also a design study: a detection needs this many steps in a row at the threshold (1: the detector's rule).
        var minSteps = 1
        /// `--only dump`: where the canceller's output (what the detector hears) of own-speech, echo-only and
        /// echo-only-ring is written, for training on it (issue #61, BENCHMARKS.md "A stop word for everyone").
        var dumpDir: String? = nil
        /// `--list-falses`: each detection that matches no phrase, with where it fell against the nearest one (a
        /// second fire after the word, one before it, or none near: the speaker's own sound); with `--only own`,
        /// each self-stop with what the speaker was playing (an answer or the ring).
        var listFalses = false
        /// `--list-misses`: each phrase not heard, with its voice (which held-out speakers a head misses, and
        /// whether it misses them whatever plays).
        var listMisses = false
        /// A design study: the microphone's samples scaled by this many dB (clipped) before the canceller, as a
        /// gain stage would (quiet voices and the detector's training levels).
        var micGainDB = 0.0
    }

    static func run(_ arguments: [String]) throws {
        var o = Options()
        var args = arguments[...]
        while let a = args.popFirst() {
            switch a {
            case "--delay-ms": o.settings.delayMS = Int(args.popFirst() ?? "") ?? o.settings.delayMS
            case "--tail-ms": o.settings.tailMS = Int(args.popFirst() ?? "") ?? o.settings.tailMS
            case "--suppress":
                // "-40,-15": the residual suppressor's attenuation without and with the person talking
                let v = (args.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
                if v.count == 2 { (o.settings.suppressDB, o.settings.suppressActiveDB) = (v[0], v[1]) }
            case "--frame-ms": o.settings.frameMS = Int(args.popFirst() ?? "") ?? o.settings.frameMS
            case "--noise-suppress": o.settings.noiseSuppressDB = Int(args.popFirst() ?? "") ?? o.settings.noiseSuppressDB
            case "--model": o.model = args.popFirst()
            case "--sensitivities": o.sensitivities = (args.popFirst() ?? "").split(separator: ",").compactMap { Double($0) }
            case "--only": o.only = args.popFirst()
            case "--detector-input": o.detectorHearsFilter = args.popFirst() != "upload"
            case "--conditions": o.conditions = (args.popFirst() ?? "").split(separator: ",").map(String.init)
            case "--ref-veto": o.refVeto = Double(args.popFirst() ?? "")
            case "--min-steps": o.minSteps = max(1, Int(args.popFirst() ?? "") ?? 1)
            case "--dump-dir": o.dumpDir = args.popFirst()
            case "--list-falses": o.listFalses = true
            case "--list-misses": o.listMisses = true
            case "--mic-gain-db": o.micGainDB = Double(args.popFirst() ?? "") ?? 0
            default: o.root = a
            }
        }
        guard !o.root.isEmpty, FileManager.default.fileExists(atPath: "\(o.root)/index.json") else {
            print("usage: hound-speaker-bench aec ROOMSET (a folder made by tools/bench/aec_room) [--delay-ms N] [--tail-ms N] [--model FILE] [--sensitivities a,b] [--only erle|hotphrase|own] [--ref-veto X] [--mic-gain-db DB] [--list-falses] [--list-misses]")
            return
        }
        print("echo canceller: speexdsp MDF, \(o.settings.frameMS) ms frames, tail \(o.settings.tailMS) ms, residual suppression \(o.settings.suppressDB)/\(o.settings.suppressActiveDB) dB, noise \(o.settings.noiseSuppressDB) dB, delay \(o.settings.delayMS) ms (guard \(EchoCanceller.guardMS) ms); the detector hears the \(o.detectorHearsFilter ? "adaptive filter's" : "uploaded (suppressed)") output")
        if o.micGainDB != 0 { print("design study: the microphone scaled by \(f1(o.micGainDB)) dB before the canceller") }
        if o.minSteps > 1 { print("design study: a detection needs \(o.minSteps) steps in a row at the threshold") }
        if let v = o.refVeto { print("design study: detections vetoed where the same model scored \(f2(v)) or more on what the speaker played (ref.wav), 1 s before to 0.2 s after") }
        if o.only == nil || o.only == "erle" { try erle(o) }
        if o.only == nil || o.only == "hotphrase" { try hotPhrase(o) }
        if o.only == nil || o.only == "own" { try ownSpeech(o) }
        if o.only == "dump" { try dump(o) }
    }

    /// The canceller's output over the own sound (own-speech/NNN, echo-only/ROOM, echo-only-ring/ROOM), as the
    /// detector hears it, written to DIR/KIND/NAME.wav (16 kHz mono): the speaker's residual, to train on; and over
    /// a person talking over it (realvg/ROOM/ESR, realvg-ring/ROOM/ESR) as DIR/KIND/ROOM-ESR.wav with its labels.json
    /// beside it as ROOM-ESR.json.
    static func dump(_ o: Options) throws {
        guard let dir = o.dumpDir else { throw DeviceError("--only dump needs --dump-dir DIR") }
        let fm = FileManager.default
        // (the condition's folder, the output's name without .wav, whether its labels go beside it); realvg*: a person
        // talking over the own sound (real clips, e.g. the stop word's training side), with the spans: double talk.
        var parts: [(from: String, to: String, labels: Bool)] = []
        for kind in ["own-speech", "echo-only", "echo-only-ring", "realvg", "realvg-ring"] where fm.fileExists(atPath: "\(o.root)/\(kind)") {
            try fm.createDirectory(atPath: "\(dir)/\(kind)", withIntermediateDirectories: true)
            for part in try rooms(o.root, kind) {
                if kind.hasPrefix("realvg") {
                    for esr in try rooms(o.root, "\(kind)/\(part)") { parts.append(("\(o.root)/\(kind)/\(part)/\(esr)", "\(dir)/\(kind)/\(part)-\(esr)", true)) }
                } else {
                    parts.append(("\(o.root)/\(kind)/\(part)", "\(dir)/\(kind)/\(part)", false))
                }
            }
        }
        var seconds = 0.0
        for (from, to, labels) in parts {
            let out = cancel(mic: try read("\(from)/mic.wav"), ref: try read("\(from)/ref.wav"), settings: o.settings,
                             hotPhrase: o.detectorHearsFilter)
            try AudioFile.writeWAV(MonoAudio(samples: out, sampleRate: SpeakerAudio.sampleRate), to: "\(to).wav")
            if labels {
                if fm.fileExists(atPath: "\(to).json") { try fm.removeItem(atPath: "\(to).json") }
                try fm.copyItem(atPath: "\(from)/labels.json", toPath: "\(to).json")
            }
            seconds += Double(out.count) / Double(SpeakerAudio.sampleRate)
        }
        print("\n## The canceller's output written to \(dir): \(f1(seconds / 3600)) h")
    }

    // MARK: Running the canceller over a recording

    /// Thread CPU seconds spent in the canceller, and the audio it processed, over the whole run.
    static let cancellerSpent = Mutex((cpu: 0.0, audio: 0.0))

    static func threadCPU() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// The microphone after the canceller (or as heard, with `cancel` false), in whole 20 ms frames
    /// (`EchoCanceller.cancel(recording:)`: the reference 80 ms ahead, as an output's queue gives it).
    static func cancel(mic: [Int16], ref: [Int16], settings: EchoCancelSettings, cancel: Bool = true, hotPhrase: Bool = false) -> [Int16] {
        guard cancel else { return mic }
        let canceller = EchoCanceller(settings: settings)
        let frames = mic.count / frameSamples
        let t0 = threadCPU()
        let out = canceller.cancel(recording: mic, reference: ref, hotPhrase: hotPhrase)
        let spent = threadCPU() - t0
        cancellerSpent.withLock { $0.cpu += spent; $0.audio += Double(frames * frameSamples) / Double(SpeakerAudio.sampleRate) }
        return Array(out[0..<frames * frameSamples])
    }

    static func gained(_ x: [Int16], _ db: Double) -> [Int16] {
        guard db != 0 else { return x }
        let g = pow(10, db / 20)
        return x.map { Int16(clamping: Int((Double($0) * g).rounded())) }
    }

    static func read(_ path: String) throws -> [Int16] {
        let audio = try AudioFile.readMono(path: path)
        guard audio.sampleRate == SpeakerAudio.sampleRate else { throw DeviceError("\(path): \(audio.sampleRate) Hz, not \(SpeakerAudio.sampleRate) Hz") }
        return audio.samples
    }

    struct DeviceError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    // MARK: Echo return loss enhancement

    static func energy(_ x: ArraySlice<Int16>) -> Double { x.reduce(0.0) { $0 + Double($1) * Double($1) } }

    static func erle(_ o: Options) throws {
        print("\n## Echo return loss enhancement (echo-only conditions; 10 log10 of the microphone's power over the output's)")
        print("| condition | first second | after 1 s | after 1 s, median of 0.5 s windows | after 1 s, 10th percentile |")
        print("|---|---|---|---|---|")
        for kind in ["echo-only", "echo-only-ring"] {
            for room in try rooms(o.root, kind) {
                let dir = "\(o.root)/\(kind)/\(room)"
                let mic = try read("\(dir)/mic.wav"), ref = try read("\(dir)/ref.wav"), echo = try read("\(dir)/echo.wav")
                let out = cancel(mic: mic, ref: ref, settings: o.settings)
                let n = out.count
                let first = 10 * log10(energy(mic[0..<second]) / max(1, energy(out[0..<second])))
                let after = 10 * log10(energy(mic[second..<n]) / max(1, energy(out[second..<n])))
                // Windows where the echo is well above the room's noise (speech pauses say nothing of the canceller).
                let noise = pow(10, -66.0 / 10) * 32768 * 32768 * 8_000
                var windows: [Double] = []
                var w = SpeakerAudio.sampleRate
                while w + 8_000 <= n {
                    if energy(echo[w..<w + 8_000]) > noise * 100 {
                        windows.append(10 * log10(energy(mic[w..<w + 8_000]) / max(1, energy(out[w..<w + 8_000]))))
                    }
                    w += 8_000
                }
                windows.sort()
                let median = windows.isEmpty ? .nan : windows[windows.count / 2]
                let p10 = windows.isEmpty ? .nan : windows[windows.count / 10]
                print("| \(kind) \(room) | \(f1(first)) dB | \(f1(after)) dB | \(f1(median)) dB | \(f1(p10)) dB |")
            }
        }
        let (cpu, audio) = cancellerSpent.withLock { ($0.cpu, $0.audio) }
        print("canceller CPU so far: \(f3(100 * cpu / max(1e-9, audio))) % of one core (\(f1(audio)) s of audio)")
    }

    // MARK: The hot phrase over the speaker's own sound

    /// Every smoothed score with its time, from a detector that never fires (so no refractory period shapes them).
    static func scores(_ audio: [Int16], model: HotPhraseModel) -> [(time: Double, score: Double)] {
        let detector = HotPhraseDetector(model: model, threshold: 1.01)
        var out: [(Double, Double)] = []
        var samples = 0
        detector.stepObserver = { score in out.append((Double(samples) / Double(SpeakerAudio.sampleRate), score)) }
        MonoAudio(samples: audio, sampleRate: SpeakerAudio.sampleRate).forEachFrame { frame in
            samples += frame.count
            detector.process(frame) { _ in }
            return true
        }
        return out
    }

    /// Detections at `threshold` with the detector's refractory period; with `veto` (the same model's scores on
    /// what was played, and the veto threshold), none where the played sound itself scored that high near it.
    static func detections(_ scores: [(time: Double, score: Double)], threshold: Double, refractory: Double,
                           veto: (scores: [(time: Double, score: Double)], threshold: Double)? = nil, minSteps: Int = 1) -> [Double] {
        var out: [Double] = []
        var deafUntil = -1.0
        var run = 0
        for (t, s) in scores {
            run = s >= threshold ? run + 1 : 0
            guard t >= deafUntil, run >= minSteps else { continue }
            if let veto, veto.scores.contains(where: { $0.time >= t - 1.0 && $0.time <= t + 0.2 && $0.score >= veto.threshold }) {
                continue
            }
            out.append(t)
            deafUntil = t + refractory
        }
        return out
    }

    struct Phrase { var start: Double; var end: Double; var voice = "" }

    /// A room set's labels.json for one recording.
    static func labels(_ dir: String) throws -> [String: Any]? {
        try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/labels.json"))) as? [String: Any]
    }

    static func phrases(_ dir: String) throws -> [Phrase] {
        let list = try labels(dir)?["phrases"] as? [[String: Any]] ?? []
        return list.compactMap { p in
            guard let s = p["start"] as? Double, let e = p["end"] as? Double else { return nil }
            return Phrase(start: s, end: e, voice: p["voice"] as? String ?? "")
        }
    }

    /// Phrases found (a detection from the phrase's start to 1.5 s after its end), and the times of the detections
    /// that match none.
    static func score(_ found: [Double], _ phrases: [Phrase]) -> (hits: Int, falses: [Double], heard: [Bool]) {
        var hit = [Bool](repeating: false, count: phrases.count)
        var falses: [Double] = []
        for t in found {
            if let i = phrases.firstIndex(where: { t >= $0.start && t <= $0.end + 1.5 }) { hit[i] = true } else { falses.append(t) }
        }
        return (hit.filter { $0 }.count, falses, hit)
    }

    /// Where an unmatched detection fell: seconds after the end of the last phrase before it (and whether that
    /// phrase was heard: after a heard "stop" a speaker has stopped its sound, so such a detection cannot happen
    /// there), and before the start of the next one.
    static func nearest(_ t: Double, _ phrases: [Phrase], heard: [Bool]) -> String {
        let last = phrases.indices.filter { phrases[$0].end <= t }.max { phrases[$0].end < phrases[$1].end }
        let before = phrases.filter { $0.start > t }.map { $0.start - t }.min()
        let after = last.map { "\(f1(t - phrases[$0].end)) s after a \(heard[$0] ? "heard" : "missed") phrase's end" }
        return "\(after ?? "no phrase before"), \(before.map { "\(f1($0)) s before the next's start" } ?? "no phrase after")"
    }

    static func name(_ kind: String, _ useAEC: Bool) -> String { useAEC ? kind : "\(kind), off" }

    static func rooms(_ root: String, _ kind: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "\(root)/\(kind)").filter { !$0.hasPrefix(".") }.sorted()
    }

    static func hotPhrase(_ o: Options) throws {
        let model = try HotPhraseModel.locate(o.model)
        let thresholds = o.sensitivities.map { HotPhraseDetector.threshold(sensitivity: $0, model: model) }
        print("\n## \"OK Hound\" over the speaker's own sound (model \(model.path); sensitivities \(o.sensitivities.map { f2($0) }.joined(separator: ", ")) = thresholds \(thresholds.map { f3($0) }.joined(separator: ", ")))")
        print("Misses per condition, summed over the rooms; `off` = the microphone as heard, without the canceller.")
        // A stop word with a ring threshold: one more column, the file as the speaker runs it (that threshold over a
        // ring's conditions, the default over the others).
        let shipped = model.ringThreshold.map { ring in
            print("as shipped: the default threshold \(f3(model.defaultThreshold)), over a ring \(f3(ring))")
            return ring
        }
        let columns = o.sensitivities.map { "missed at \(f2($0)) (false)" } + (shipped == nil ? [] : ["as shipped (false)"])
        print("| condition | ESR | phrases | " + columns.joined(separator: " | ") + " |")
        print("|---|---|---|" + String(repeating: "---|", count: columns.count))
        for condition in o.conditions {
            let useAEC = !condition.hasSuffix("-off")
            let kind = useAEC ? condition : String(condition.dropLast(4))
            let roomList = try rooms(o.root, kind)
            let esrs = try FileManager.default.contentsOfDirectory(atPath: "\(o.root)/\(kind)/\(roomList[0])").compactMap(Int.init).sorted()
            let thresholds = thresholds + (shipped.map { [kind.contains("ring") ? $0 : model.defaultThreshold] } ?? [])
            for esr in esrs {
                var total = 0
                var missed = [Int](repeating: 0, count: thresholds.count), falses = [Int](repeating: 0, count: thresholds.count)
                for room in roomList {
                    let dir = "\(o.root)/\(kind)/\(room)/\(esr)"
                    let list = try phrases(dir)
                    let ref = try read("\(dir)/ref.wav")
                    let heard = cancel(mic: gained(try read("\(dir)/mic.wav"), o.micGainDB), ref: ref, settings: o.settings, cancel: useAEC, hotPhrase: o.detectorHearsFilter)
                    let s = scores(heard, model: model)
                    let veto = o.refVeto.map { (scores(ref, model: model), $0) }
                    total += list.count
                    for (i, t) in thresholds.enumerated() {
                        let r = score(detections(s, threshold: t, refractory: model.refractorySeconds, veto: veto, minSteps: o.minSteps), list)
                        missed[i] += list.count - r.hits
                        falses[i] += r.falses.count
                        if o.listFalses {
                            for f in r.falses { print("  false at \(f3(t)): \(kind) \(room) \(esr) dB at \(f1(f)) s: \(nearest(f, list, heard: r.heard))") }
                        }
                        if o.listMisses {
                            for (p, heard) in zip(list, r.heard) where !heard {
                                print("  missed at \(f3(t)): \(name(kind, useAEC)) \(room) \(esr) dB at \(f1(p.start)) s: \(p.voice)")
                            }
                        }
                    }
                }
                print("| \(name(kind, useAEC)) | \(esr) dB | \(total) | " + thresholds.indices.map { "\(pct(missed[$0], total)) (\(falses[$0]))" }.joined(separator: " | ") + " |")
            }
        }
        let (cpu, audio) = cancellerSpent.withLock { ($0.cpu, $0.audio) }
        print("canceller CPU so far: \(f3(100 * cpu / max(1e-9, audio))) % of one core (\(f1(audio)) s of audio)")
    }

    struct Segment { var kind: String; var start: Double; var end: Double }

    /// A stop word's detections as the speaker makes them: armed only while something plays (0.1 s past its end:
    /// the output's queue), at `ring` over a ring and `answer` over anything else, one refractory period for all.
    static func stopsWhilePlaying(_ scores: [(time: Double, score: Double)], _ segments: [Segment], answer: Double, ring: Double,
                                  refractory: Double) -> [(time: Double, overRing: Bool)] {
        var out: [(Double, Bool)] = []
        var deafUntil = -1.0
        var next = 0
        for (t, s) in scores {
            while next < segments.count && segments[next].end + 0.1 < t { next += 1 }
            guard next < segments.count, segments[next].start <= t, t >= deafUntil else { continue }
            let overRing = segments[next].kind == "ring"
            guard s >= (overRing ? ring : answer) else { continue }
            out.append((t, overRing))
            deafUntil = t + refractory
        }
        return out
    }

    /// What the speaker played in an own-speech file (labels.json's far_end segments: "answer" or "ring").
    static func segments(_ dir: String) throws -> [Segment] {
        let list = (try labels(dir)?["far_end"] as? [String: Any])?["segments"] as? [[String: Any]] ?? []
        return list.compactMap { p in
            guard let k = p["kind"] as? String, let s = p["start"] as? Double, let e = p["end"] as? Double else { return nil }
            return Segment(kind: k, start: s, end: e)
        }
    }

    /// What was playing at `t` and how far into it (0.1 s past its end still counts: the output's queue), or how
    /// long after the end of what played last. A speaker listens for the stop word only while it plays.
    static func playing(_ t: Double, _ segments: [Segment]) -> String {
        guard let last = segments.last(where: { $0.start <= t }) else { return "nothing yet" }
        if t <= last.end + 0.1 { return "over \(last.kind), \(f1(t - last.start)) s into it" }
        return "after \(last.kind == "ring" ? "a ring" : "an answer"), \(f1(t - last.end)) s after its end"
    }

    static func ownSpeech(_ o: Options) throws {
        let model = try HotPhraseModel.locate(o.model)
        let thresholds = o.sensitivities.map { HotPhraseDetector.threshold(sensitivity: $0, model: model) }
        var hours = 0.0
        var wakes = [Int](repeating: 0, count: thresholds.count), wakesOff = wakes
        var detectorCPU = 0.0
        var shippedStops = [0, 0]  // over an answer, over a ring
        for part in try rooms(o.root, "own-speech") {
            let dir = "\(o.root)/own-speech/\(part)"
            let mic = try read("\(dir)/mic.wav"), ref = try read("\(dir)/ref.wav")
            let out = cancel(mic: mic, ref: ref, settings: o.settings, hotPhrase: o.detectorHearsFilter)
            hours += Double(out.count) / Double(SpeakerAudio.sampleRate) / 3600
            let t0 = threadCPU()
            let s = scores(out, model: model)
            detectorCPU += threadCPU() - t0
            let sOff = scores(mic, model: model)
            let veto = o.refVeto.map { (scores(ref, model: model), $0) }
            let playingList = o.listFalses || model.ringThreshold != nil ? try segments(dir) : []
            if let ring = model.ringThreshold {
                for t in stopsWhilePlaying(s, playingList, answer: model.defaultThreshold, ring: ring, refractory: model.refractorySeconds) {
                    shippedStops[t.overRing ? 1 : 0] += 1
                    if o.listFalses {
                        print("  self-stop as shipped: own-speech \(part) at \(f1(t.time)) s, \(playing(t.time, playingList)) (score \(f3(s.last { $0.time <= t.time }?.score ?? 0)))")
                    }
                }
            }
            for (i, t) in thresholds.enumerated() {
                let found = detections(s, threshold: t, refractory: model.refractorySeconds, veto: veto, minSteps: o.minSteps)
                wakes[i] += found.count
                for f in found where o.listFalses {
                    print("  false at \(f3(t)): own-speech \(part) at \(f1(f)) s, \(playing(f, playingList)) (score \(f3(s.last { $0.time <= f }?.score ?? 0)))")
                }
                wakesOff[i] += detections(sOff, threshold: t, refractory: model.refractorySeconds, veto: veto, minSteps: o.minSteps).count
            }
        }
        print("\n## False wakes in \(f2(hours)) h of the speaker's own speech and ringing (own-speech)")
        print("| sensitivity | threshold | false wakes with the canceller | per hour | without it |")
        print("|---|---|---|---|---|")
        for (i, s) in o.sensitivities.enumerated() {
            print("| \(f2(s)) | \(f3(thresholds[i])) | \(wakes[i]) | \(f2(Double(wakes[i]) / hours)) | \(wakesOff[i]) |")
        }
        if let ring = model.ringThreshold {
            print("As shipped (a stop word listens only while the speaker plays, 0.1 s past its end counted, at \(f3(model.defaultThreshold)) over an answer and \(f3(ring)) over a ring): \(shippedStops[0] + shippedStops[1]) self-stop\(shippedStops[0] + shippedStops[1] == 1 ? "" : "s"), \(shippedStops[0]) over an answer and \(shippedStops[1]) over a ring")
        }
        let (cpu, audio) = cancellerSpent.withLock { ($0.cpu, $0.audio) }
        print("canceller CPU: \(f3(100 * cpu / max(1e-9, audio))) % of one core over \(f1(audio)) s of audio; hot phrase on it: \(f3(100 * detectorCPU / (hours * 3600))) % of one core")
    }

    static func f1(_ x: Double) -> String { String(format: "%.1f", x) }
    static func f2(_ x: Double) -> String { String(format: "%.2f", x) }
    static func f3(_ x: Double) -> String { String(format: "%.3f", x) }
    static func pct(_ a: Int, _ b: Int) -> String { b == 0 ? "-" : String(format: "%.1f %%", 100 * Double(a) / Double(b)) }
}
