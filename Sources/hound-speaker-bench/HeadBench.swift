import Audio
import AudioCore
import Foundation
import Glibc
import HotPhrase
import Platform

/// The personal head as the speaker would train it (Sources/HotPhrase/PersonalHead.swift), for one enrollment:
/// its time, and the head itself for the measurement to score (tools/hotphrase/hotphrase/household_head.py,
/// `--swift-heads`).
///
///   hound-speaker-bench head OUT.json TAKE.wav... [--model FILE] [--bank FILE] [--renderings measured|none]
///                            [--babble WAV...]
///
/// OUT.json: {"weights": [12 x 96 numbers, oldest frame first], "bias", "positives", "negatives", "cpu_seconds"
/// (this thread's CPU from the takes read to the head scaled: embedding, renderings and fit)}.
enum HeadBench {
    struct Report: Encodable {
        let weights: [Float]
        let bias: Double
        let positives: Int
        let negatives: Int
        let cpu_seconds: Double
    }

    static func run(_ arguments: [String]) throws {
        var args = arguments[...]
        guard let out = args.popFirst() else { throw usage() }
        var takes: [String] = [], babble: [String] = []
        var model: String?, bank: String?, renderings = TakeRenderings.measured
        var intoBabble = false
        while let a = args.popFirst() {
            switch a {
            case "--model": model = args.popFirst()
            case "--bank": bank = args.popFirst()
            case "--renderings":
                switch args.popFirst() {
                case "measured": renderings = TakeRenderings.measured
                case "none": renderings = []
                default: throw usage()
                }
            case "--babble": intoBabble = true
            default: if intoBabble { babble.append(a) } else { takes.append(a) }
            }
        }
        guard !takes.isEmpty else { throw usage() }
        let loaded = try HotPhraseModel.locate(model)
        let negatives = try NegativeBank.locate(bank)
        let voices = try babble.map { try AudioFile.readMono(path: $0).samples.map { Float($0) / 32768 } }
        let samples = try takes.map { try AudioFile.readMono(path: $0).samples }
        let t0 = EchoBench.threadCPU()
        let enrolled = try samples.map { (samples: $0, take: try Enrollment.take($0, model: loaded)) }
        let positives = PersonalHead.positives(takes: enrolled, model: loaded, bank: negatives, renderings: renderings,
                                               babble: voices)
        let bankWindows = PersonalHead.negatives(bank: negatives)
        let head = try PersonalHead.fit(positives: positives, negatives: bankWindows)
        let cpu = EchoBench.threadCPU() - t0
        let report = Report(weights: head.weights, bias: head.bias, positives: positives.count,
                            negatives: bankWindows.count, cpu_seconds: cpu)
        try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: out))
        print(String(cFormat: "head: %ld takes, %ld renderings each, %.2f s CPU", takes.count, renderings.count, cpu))
    }

    static func usage() -> any Error {
        NSError(domain: "hound-speaker-bench", code: 2, userInfo: [NSLocalizedDescriptionKey:
            "usage: hound-speaker-bench head OUT.json TAKE.wav... [--model FILE] [--bank FILE] [--renderings measured|none] [--babble WAV...]"])
    }
}
