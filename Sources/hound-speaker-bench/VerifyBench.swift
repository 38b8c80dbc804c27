import Audio
import AudioCore
import Foundation
import Glibc
import HotPhrase
import OfflineRecognition

/// PocketSphinx as a second check of the hot phrase's wakes (issue #63): the phrase looked for as a key phrase
/// around each wake, at each `--settings` entry `PLP:THRESHOLD[:BEFORE[:AFTER]]` (`-kws_plp`, `-kws_threshold`, and
/// the seconds before and after the wake that are checked; default `--window` 1.5 before, none after).
///
///   hound-speaker-bench verify wakes OUT.tsv [--model HPM] [--sensitivity S] [--phrase P] [--dump DIR] DIR...
///       each DIR's recordings joined (0.5 s of silence between) and run through the shipped detector; every wake
///       is a false wake, checked (`--dump`: each wake's 4 s before and 1 s after written as DIR/wake-N.wav).
///   hound-speaker-bench verify windows OUT.tsv [--phrase P] DIR...    `--dump`'s files, the wake 4 s in: kept or not
///   hound-speaker-bench verify keywords OUT.tsv --phrase P DIR...
///       each recording is one utterance of P, the wake 0.2 s after its speech ends (where a detector fires).
///
/// One line per wake or recording: the set, the recording, the time, the score (wakes), then 1 (heard) or 0 per
/// setting. `--whole`: each window given to PocketSphinx at once (its cepstral mean over the whole window).
enum VerifyBench {
    struct Options {
        var mode = "", out = "", model: String?, whole = false, dump: String?, sensitivity = 0.5, phrase = "ok hound", window = 1.5
        var settings = ["1e-1:1e-80", "1e-3:1e-80", "1e-8:1e-80", "1e-1:1e-30", "1e-1:1e-10"]
        var roots: [String] = []
    }

    static let pronunciations = ["snowboy": "S N OW B OY"]

    static func run(_ arguments: [String]) throws {
        var o = Options()
        var rest = arguments[...]
        o.mode = rest.popFirst() ?? ""
        o.out = rest.popFirst() ?? ""
        while let a = rest.popFirst() {
            switch a {
            case "--model": o.model = rest.popFirst()
            case "--sensitivity": o.sensitivity = Double(rest.popFirst() ?? "") ?? o.sensitivity
            case "--phrase": o.phrase = rest.popFirst() ?? o.phrase
            case "--whole": o.whole = true
            case "--dump": o.dump = rest.popFirst()
            case "--window": o.window = Double(rest.popFirst() ?? "") ?? o.window
            case "--settings": o.settings = (rest.popFirst() ?? "").split(separator: ",").map(String.init)
            default: o.roots.append(a)
            }
        }
        guard ["wakes", "keywords", "windows"].contains(o.mode), !o.out.isEmpty, !o.roots.isEmpty else {
            print("usage: hound-speaker-bench verify wakes|keywords OUT.tsv [--phrase P] [--settings PLP:THR,...] DIR...")
            return
        }
        let spotters = try o.settings.map { s -> PhraseSpotter in
            let parts = s.split(separator: ":").map(String.init)
            return try PhraseSpotter(phrase: o.phrase, pronunciations: pronunciations, threshold: parts.count > 1 ? parts[1] : "1e-80",
                                     loopPenalty: parts[0])
        }
        var out = "set\trecording\ttime\tscore\t" + o.settings.joined(separator: "\t") + "\n"
        var kept = [Int](repeating: 0, count: spotters.count), total = 0
        let rate = SpeakerAudio.sampleRate
        // A setting's third and fourth parts, if any: the seconds before and after the wake that are checked.
        let spans = o.settings.map { s -> (Int, Int) in
            let parts = s.split(separator: ":")
            let before = parts.count > 2 ? Double(parts[2]) ?? o.window : o.window
            let after = parts.count > 3 ? Double(parts[3]) ?? 0 : 0
            return (Int(before * Double(rate)), Int(after * Double(rate)))
        }
        func check(_ audio: [Int16], at wake: Int) -> [Bool] {
            zip(spotters, spans).map { spotter, span in
                var window = Array(audio[max(0, wake - span.0)..<min(audio.count, wake + span.1)])
                // Audio missing before the recording's start is quiet, as a microphone's would be.
                if wake - span.0 < 0 { window = [Int16](repeating: 0, count: span.0 - wake) + window }
                return spotter.hears(window, whole: o.whole)
            }
        }
        func record(_ set: String, _ file: String, _ time: Double, _ score: String, _ results: [Bool]) {
            total += 1
            for (i, r) in results.enumerated() where r { kept[i] += 1 }
            out += "\(set)\t\(file)\t\(String(format: "%.2f", time))\t\(score)\t" + results.map { $0 ? "1" : "0" }.joined(separator: "\t") + "\n"
        }
        if o.mode == "wakes" {
            let model = try HotPhraseModel.locate(o.model)
            let threshold = HotPhraseDetector.threshold(sensitivity: o.sensitivity, model: model)
            for root in o.roots {
                let files = audioFiles(root)
                var joined: [Int16] = [], starts: [(Int, String)] = []
                for f in files {
                    starts.append((joined.count, f))
                    joined += try AudioFile.readMono(path: f).samples
                    joined += [Int16](repeating: 0, count: rate / 2)
                }
                let detector = HotPhraseDetector(model: model, threshold: threshold)
                var wakes: [HotPhraseDetection] = []
                _ = MonoAudio(samples: joined, sampleRate: rate).forEachFrame { frame in
                    detector.process(frame) { wakes.append($0) }
                    return true
                }
                for w in wakes {
                    let end = min(joined.count, Int(w.time * Double(rate)))
                    if let dump = o.dump {
                        // 4 s before the wake and 1 s after, for `verify windows`
                        var clip = Array(joined[max(0, end - 4 * rate)..<min(joined.count, end + rate)])
                        if end < 4 * rate { clip = [Int16](repeating: 0, count: 4 * rate - end) + clip }
                        try AudioFile.writeWAV(MonoAudio(samples: clip, sampleRate: rate), to: "\(dump)/wake-\(total).wav")
                    }
                    record(root, starts.last { $0.0 <= end - rate / 5 }?.1 ?? "-", w.time, String(format: "%.5f", w.score),
                           check(joined, at: end))
                }
                print("\(root): \(files.count) recordings, \(String(format: "%.2f", Double(joined.count) / Double(rate) / 3600)) h, "
                      + "\(wakes.count) wakes at threshold \(String(format: "%.5f", threshold))")
            }
            print("wakes \(total); kept by the check, per setting: "
                  + zip(o.settings, kept).map { "\($0) \($1)" }.joined(separator: ", "))
        } else {
            for root in o.roots {
                for f in audioFiles(root) {
                    let samples = try AudioFile.readMono(path: f).samples
                    // `windows`: the wake is 4 s in (as `wakes --dump` writes them); else where a detector fires,
                    // 0.2 s after the speech ends
                    let wake = o.mode == "windows" ? 4 * rate : speechEnd(samples) + rate / 5
                    record(root, f, Double(wake) / Double(rate), "-", check(samples, at: wake))
                }
            }
            print("\"\(o.phrase)\": \(total) recordings; \(o.mode == "windows" ? "kept" : "missed") by the check, per setting: "
                  + zip(o.settings, kept).map {
                      let n = o.mode == "windows" ? $1 : total - $1
                      return "\($0) \(n) (\(String(format: "%.1f", 100 * Double(n) / Double(max(1, total)))) %)"
                  }.joined(separator: ", "))
        }
        try out.write(toFile: o.out, atomically: true, encoding: .utf8)
    }

    static func audioFiles(_ root: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory) else { return [] }
        if !isDirectory.boolValue { return [root] }
        let found = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return found.filter { $0.hasSuffix(".wav") || $0.hasSuffix(".flac") }.sorted().map { "\(root)/\($0)" }
    }

    /// The end of the last 20 ms frame within 30 dB of the loudest (the recording's speech ends there).
    static func speechEnd(_ samples: [Int16]) -> Int {
        let frame = SpeakerAudio.sampleRate / 50
        var energies: [Double] = []
        var i = 0
        while i + frame <= samples.count {
            var e = 0.0
            for s in samples[i..<(i + frame)] { e += Double(s) * Double(s) }
            energies.append(e / Double(frame))
            i += frame
        }
        guard let peak = energies.max(), peak > 0 else { return samples.count }
        let last = energies.lastIndex { $0 >= peak / 1000 } ?? energies.count - 1
        return (last + 1) * frame
    }
}
