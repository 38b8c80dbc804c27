import Foundation
import Testing
import Audio
import AudioCore
import SpeakerCore
import Timers
import OfflineRecognition
import OwnCommands
import Platform
import TestSupport

/// The real recogniser (PocketSphinx with Debian's pocketsphinx-en-us) on commands spoken by flite.
@Suite(.ownThread) struct OfflineRecogniserTests {
    static func spoken(_ text: String) throws -> [Int16] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-offline-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        // A US voice: PocketSphinx's model is US English.
        try fliteWAV(text, to: path)
        // With the quiet around it that a question's recording has (the recogniser's cepstral mean starts from it).
        let quiet = [Int16](repeating: 0, count: 4_800)
        return quiet + (try AudioFile.readMono(path: path).samples) + quiet
    }

    @Test func spokenCommandsAreUnderstood() throws {
        let recogniser = try OfflineRecogniser()
        for (text, kind) in [("set a timer for five minutes", OwnAction.Kind.timerSet), ("what time is it", .time),
                             ("turn it up", .volumeStep), ("cancel the timer", .timerCancel), ("stop", .stop)] {
            let heard = recogniser.recognise(try Self.spoken(text))
            #expect(heard.action?.kind == kind, "\"\(text)\" heard as \"\(heard.words)\"")
        }
        let timer = recogniser.recognise(try Self.spoken("set a timer for five minutes"))
        #expect(timer.action == .client(.timer(.set(seconds: 300, name: ""))), "\(timer.words)")
    }

    /// The grammar alone makes the nearest command of anything said; the check of its words as a key phrase is what
    /// turns a question outside it down (`unconfirmed` shows the grammar did find one).
    @Test func questionsOutsideTheGrammarAreTurnedDown() throws {
        let recogniser = try OfflineRecogniser()
        for text in ["what's the weather like tomorrow", "how far away is the moon"] {
            let heard = recogniser.recognise(try Self.spoken(text))
            #expect(heard.action == nil && heard.words.isEmpty, "\"\(text)\" heard as \"\(heard.words)\"")
            #expect(!heard.unconfirmed.isEmpty, "\"\(text)\": the grammar found nothing, so the check was not tried")
        }
        // And a command said after one of those is still heard (the check leaves the grammar's search in place).
        #expect(recogniser.recognise(try Self.spoken("what time is it")).action?.kind == .time)
    }

    /// Wider beams for the grammar search only (the check keeps PocketSphinx's): a command is still understood and a
    /// question outside the grammar still turned down.
    @Test func widerGrammarBeamsKeepTheCheck() throws {
        let recogniser = try OfflineRecogniser(grammarBeams: .init(beam: 1e-80, word: 1e-60, phone: 1e-80))
        #expect(recogniser.recognise(try Self.spoken("set a timer for five minutes")).action
                == .client(.timer(.set(seconds: 300, name: ""))))
        let outside = recogniser.recognise(try Self.spoken("how far away is the moon"))
        #expect(outside.action == nil && !outside.unconfirmed.isEmpty, "\(outside)")
    }

    /// The key-phrase spotter measured as a second check of wakes: the phrase said is heard (with audio after it,
    /// which PocketSphinx needs to end the phrase), another phrase is not, and a word the dictionary lacks is named.
    @Test func thePhraseSpotterHearsItsPhrase() throws {
        let spotter = try PhraseSpotter(phrase: "ok hound", loopPenalty: "1e-3")
        #expect(spotter.hears(try Self.spoken("ok hound")))
        #expect(!spotter.hears(try Self.spoken("what's the weather like tomorrow")))
        #expect(!spotter.hears([Int16](repeating: 0, count: 16_000)))
        #expect(try PhraseSpotter(phrase: "snowboy", pronunciations: ["snowboy": "S N OW B OY"]).phrase == "snowboy")
        #expect(throws: OfflineRecogniserError.self) { try PhraseSpotter(phrase: "zqxv hound") }
    }

    @Test func silenceIsNothing() throws {
        let recogniser = try OfflineRecogniser()
        #expect(recogniser.recognise([Int16](repeating: 0, count: 16_000)).action == nil)
    }

    @Test func theDoctorSaysWhetherItLoads() {
        #expect(OfflineRecogniser.diagnostic(enabled: true).status == .ok)
        let missing = OfflineRecogniser.diagnostic(enabled: true, model: "/nonexistent/model")
        #expect(missing.status == .warn && missing.summary.contains("/nonexistent/model/en-us/mdef is missing"), "\(missing)")
        #expect(OfflineRecogniser.diagnostic(enabled: false, model: "/nonexistent/model").status == .info)
    }

    @Test func aMissingModelIsNamed() {
        #expect(throws: OfflineRecogniserError.self) { try OfflineRecogniser(model: "/nonexistent/model") }
        do { _ = try OfflineRecogniser(model: "/nonexistent/model") } catch {
            #expect(error.description.contains("/nonexistent/model/en-us/mdef is missing"))
        }
    }
}
