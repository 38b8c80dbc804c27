import Foundation
import Testing
import Audio
import AudioCore
import SpeakerCore
import Timers
import OfflineRecognition
import OwnCommands
import TestSupport

/// The real recogniser (PocketSphinx with Debian's pocketsphinx-en-us) on commands spoken by espeak-ng.
@Suite struct OfflineRecogniserTests {
    static func spoken(_ text: String) throws -> [Int16] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-offline-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        // espeak-ng's US voice: PocketSphinx's model is US English, and hears its default (British) voice poorly.
        try espeakWAV(text, to: path, voice: "en-us")
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

    @Test func silenceIsNothing() throws {
        let recogniser = try OfflineRecogniser()
        #expect(recogniser.recognise([Int16](repeating: 0, count: 16_000)).action == nil)
    }

    @Test func aMissingModelIsNamed() {
        #expect(throws: OfflineRecogniserError.self) { try OfflineRecogniser(model: "/nonexistent/model") }
        do { _ = try OfflineRecogniser(model: "/nonexistent/model") } catch {
            #expect(error.description.contains("/nonexistent/model/en-us/mdef is missing"))
        }
    }
}
