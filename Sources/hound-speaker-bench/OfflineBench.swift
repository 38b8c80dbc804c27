import Audio
import AudioCore
import Foundation
import Glibc
import OfflineRecognition
import JSONKit
import OwnCommands
import CSpeexDSP

/// The offline recogniser over many recordings (issue #63): one line per file, tab-separated, to measure what it
/// understands and what it does on speech outside its grammar.
///
///   hound-speaker-bench offline OUT.tsv [--denoise DB] [--grammar-beams B,W,P] DIR|FILE...
///       (WAV or FLAC, found recursively, any rate; `--denoise`: speexdsp's noise suppressor first, at most DB of
///       attenuation; `--grammar-beams`: the grammar search's -beam, -wbeam and -pbeam)
///
/// Columns: path, seconds, words heard, the command's kind (or -), the command as JSON, the CPU seconds the
/// recogniser spent, and, for a recording with its sentence beside it (NAME.txt),
/// the command that sentence says and whether the one heard is it (the same kind and numbers); then the grammar's
/// words that the key-phrase check did not confirm.
enum OfflineBench {
    static func run(_ arguments: [String]) throws {
        guard arguments.count >= 2 else {
            print("usage: hound-speaker-bench offline OUT.tsv [--denoise DB] [--grammar-beams B,W,P] DIR|FILE...")
            return
        }
        var files: [String] = []
        var denoise: Int32?, beams: OfflineRecogniser.Beams?
        var roots = Array(arguments.dropFirst())
        while roots.count > 1, roots[0].hasPrefix("--") {
            if roots[0] == "--denoise" { denoise = Int32(roots[1]) }
            if roots[0] == "--grammar-beams" {
                let b = roots[1].split(separator: ",").compactMap { Double($0) }
                if b.count == 3 { beams = .init(beam: b[0], word: b[1], phone: b[2]) }
            }
            roots.removeFirst(2)
        }
        let recogniser = try OfflineRecogniser(grammarBeams: beams)
        for root in roots { files += VerifyBench.audioFiles(root) }
        var out = "path\tseconds\theard\tkind\tcommand\tcpu\texpected\tright\tunconfirmed\n"
        var audioSeconds = 0.0, cpuSeconds = 0.0, actions = 0, labelled = 0, right = 0
        for (i, path) in files.enumerated() {
            var audio = try AudioFile.readMono(path: path)
            let t0 = EchoBench.threadCPU()
            if let denoise { audio.samples = suppressNoise(audio.samples, db: denoise) }
            let heard = recogniser.recognise(audio.samples)
            let cpu = EchoBench.threadCPU() - t0
            let seconds = Double(audio.samples.count) / Double(SpeakerAudio.sampleRate)
            audioSeconds += seconds
            cpuSeconds += cpu
            if heard.action != nil { actions += 1 }
            var expected = "-", isRight = "-"
            let sentencePath = String(path.dropLast(path.hasSuffix(".wav") ? 4 : 5)) + ".txt"
            if let sentence = try? String(contentsOfFile: sentencePath, encoding: .utf8) {
                let wanted = OwnCommands.match(sentence.trimmingCharacters(in: .whitespacesAndNewlines))
                expected = wanted?.json.asciiJSON() ?? "null"
                labelled += 1
                if wanted != nil && heard.action == wanted { right += 1; isRight = "1" } else { isRight = "0" }
            }
            out += "\(path)\t\(String(format: "%.2f", seconds))\t\(heard.words)\t\(heard.action?.kind.rawValue ?? "-")\t"
                + "\(heard.action?.json.asciiJSON() ?? "-")\t\(String(format: "%.3f", cpu))\t\(expected)\t\(isRight)\t\(heard.unconfirmed)\n"
            if i % 500 == 499 { print("\(i + 1) of \(files.count)") }
        }
        try out.write(toFile: arguments[0], atomically: true, encoding: .utf8)
        print(String(format: "%d files, %.2f h, %d heard as a command; recogniser CPU %.3f s per s of audio", files.count,
                     audioSeconds / 3600, actions, cpuSeconds / max(1e-9, audioSeconds)))
        if labelled > 0 { print("with their sentences: \(right) of \(labelled) understood (the right command and numbers)") }
    }

    /// speexdsp's noise suppressor (the one the echo canceller uses), in 20 ms frames, `db` its most attenuation.
    static func suppressNoise(_ samples: [Int16], db: Int32) -> [Int16] {
        let frame = 320
        guard let state = speex_preprocess_state_init(Int32(frame), Int32(SpeakerAudio.sampleRate)) else { return samples }
        defer { speex_preprocess_state_destroy(state) }
        var on: Int32 = 1, off: Int32 = 0, level = -abs(db)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DENOISE, &on)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_AGC, &off)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DEREVERB, &off)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &level)
        var out = samples + [Int16](repeating: 0, count: (frame - samples.count % frame) % frame)
        out.withUnsafeMutableBufferPointer { buffer in
            var i = 0
            while i < buffer.count {
                _ = speex_preprocess_run(state, buffer.baseAddress! + i)
                i += frame
            }
        }
        return Array(out.prefix(samples.count))
    }
}
