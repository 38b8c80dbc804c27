@testable import Assembly
import AudioCore
import HotPhrase
import Logging
import Synchronization
import SpeakerConfig
import Testing
import TestSupport

/// The shipped stop word for everyone inside the speaker (issue #61): loaded with the shipped hot-phrase model,
/// turned off by `[hotphrase] stop_word = false`, and the start's log line saying what stops it by voice.
@Suite struct StopWordAssemblyTests {
    static let generic = repositoryRoot + "/share/hotphrase/ok-hound.hpm"
    static let shipped = repositoryRoot + "/share/hotphrase/stop.hpm"

    /// The shipped file rides on the shipped model's frames at the thresholds BENCHMARKS.md chose for it, over an
    /// answer and over a ring (at most one self-stop in each of three held-out 10 h sets of the speaker's own
    /// sound, one of them its ring alone), and the start's log line says both.
    @Test func theShippedStopWordRidesOnTheShippedModel() throws {
        let generic = try HotPhraseModel.load(path: Self.generic)
        let model = try #require(try StopWord.locate(Self.shipped))
        #expect(model.phrase == "stop")
        #expect(model.defaultThreshold == 0.9 && model.ringThreshold == 0.775)
        let stop = try StopWord(model: model, generic: generic)
        #expect(stop.threshold == 0.9 && stop.ringThreshold == 0.775)
        let listener = HotPhraseListener(model: generic, settings: HotPhraseSettings(), stopWord: model)
        #expect(listener.stopWordStatus.hasPrefix("the stop word \"stop\" for everyone"), "\(listener.stopWordStatus)")
        #expect(listener.stopWordStatus.contains("threshold 0.9000, over a ring 0.7750"), "\(listener.stopWordStatus)")
    }

    @Test func theLogLineSaysWhatStopsItByVoice() throws {
        let generic = try HotPhraseModel.load(path: Self.generic)
        let with = HotPhraseListener(model: generic, settings: HotPhraseSettings(), stopWord: try HotPhraseModel.load(path: Self.shipped))
        var config = SpeakerConfiguration()
        let on = SpeakerAssembly.stopWordLine(with, echo: true)
        #expect(on.hasPrefix("the stop word \"stop\" for everyone") && on.hasSuffix("over the echo canceller's output"), "\(on)")
        // Without a canceller nothing is heard over the speaker's own sound, so the line must not promise it.
        let noEcho = SpeakerAssembly.stopWordLine(with, echo: false)
        #expect(noEcho.hasPrefix("nothing is listened for (echo cancellation is off), so only the button stops it"), "\(noEcho)")
        config.hotphrase.stopWord = false
        let off = SpeakerAssembly.stopWordLine(HotPhraseListener(model: generic, settings: config.hotphrase, stopWord: try HotPhraseModel.load(path: Self.shipped)), echo: true)
        #expect(off.contains("[hotphrase] stop_word = false"), "\(off)")
        #expect(!off.contains("the stop word \"stop\""))
    }

    /// A format-1 hot-phrase model (a slow board's, as the Pi box's) has no embedding for the stop word to ride
    /// on: said in the start's line, and not an error (the box checks that the journal has none).
    @Test func aFormat1ModelHasNoStopWordAndNoError() throws {
        let v9 = try HotPhraseModel.load(path: repositoryRoot + "/Tests/HotPhraseTests/Fixtures/ok-hound-v9.hpm")
        let logged = Logged()
        let listener = HotPhraseListener(model: v9, settings: HotPhraseSettings(), echo: nil, household: nil,
                                         logger: Logger(label: "test") { _ in logged },
                                         stopWord: try HotPhraseModel.load(path: Self.shipped))
        #expect(listener.stopWordStatus.contains("is format 1"), "\(listener.stopWordStatus)")
        #expect(logged.lines.isEmpty, "\(logged.lines)")
    }
}

/// The lines logged at warning and above.
private struct Logged: LogHandler {
    final class Box: Sendable { let lines = Mutex<[String]>([]) }
    let box = Box()
    var lines: [String] { box.lines.withLock { $0 } }
    var logLevel: Logger.Level = .warning
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { box.lines.withLock { $0.append("\(event.message)") } }
}
