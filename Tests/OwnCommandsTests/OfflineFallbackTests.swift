import Foundation
import Synchronization
import Testing
import Audio
import AudioCore
import OfflineRecognition
import OwnCommands
import SpeakerCore
import SpeakerTestKit
import Timers

/// The fallback over a fake Houndify and the real recogniser: the device answers only when Houndify cannot.
@Suite struct OfflineFallbackTests {
    static let recogniser = Mutex<OfflineRecogniser?>(nil)
    /// One recogniser for the suite (its model loads once); `loads` counts the loads the fallback asked for.
    final class Loader: Sendable {
        let loads = Mutex(0)
        func load() throws(OfflineRecogniserError) -> OfflineRecogniser {
            loads.withLock { $0 += 1 }
            if let r = OfflineFallbackTests.recogniser.withLock({ $0 }) { return r }
            let r = try OfflineRecogniser()
            OfflineFallbackTests.recogniser.withLock { $0 = r }
            return r
        }
    }

    static func fallback() -> (OfflineFallbackSearch, FakeVoiceSearch, Loader) {
        let inner = FakeVoiceSearch(clock: ManualClock())
        let loader = Loader()
        return (OfflineFallbackSearch(inner: inner, load: { () throws(OfflineRecogniserError) in try loader.load() }), inner, loader)
    }

    static func write(_ samples: [Int16], to session: any VoiceSearchSession) -> Int {
        var taken = 0
        for start in stride(from: 0, to: samples.count, by: 320) {
            let ok = samples[start..<min(start + 320, samples.count)].withUnsafeBufferPointer { session.write($0) }
            if ok { taken += 1 }
        }
        return taken
    }

    static func next(_ session: any VoiceSearchSession) async -> SearchEvent? {
        for await event in session.events { return event }
        return nil
    }

    static let offline = SearchError(.offline, detail: "connection refused", code: "ConnectionFailure")

    @Test func houndifyUnreachableWhileThePersonSpeaksTheDeviceAnswersAtTheEnd() async throws {
        let (search, inner, _) = Self.fallback()
        let session = try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true)
        let audio = try OfflineRecogniserTests.spoken("set a timer for five minutes")
        // Houndify fails at once: the question still goes on, to the speaker's own end of speech.
        inner.latest?.send(.failed(Self.offline))
        try await Task.sleep(for: .milliseconds(100))
        #expect(Self.write(audio, to: session) == (audio.count + 319) / 320, "every frame taken after Houndify failed")
        session.finish()
        guard case .answer(let answer)? = await Self.next(session) else { Issue.record("no answer"); return }
        #expect(answer.action == .timer(.set(seconds: 300, name: "")))
        #expect(answer.device == DeviceAnswer(failure: .offline))
    }

    @Test func houndifysAnswerStandsAndNothingIsRecognised() async throws {
        let (search, inner, loader) = Self.fallback()
        let session = try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true)
        inner.latest?.send(.partialTranscript("set a timer"))
        #expect(await Self.next(session) == .partialTranscript("set a timer"))
        _ = Self.write(try OfflineRecogniserTests.spoken("set a timer for five minutes"), to: session)
        session.finish()
        let houndify = SpeakerAnswer(transcript: "set a timer for five minutes", text: "Done.", action: .timer(.set(seconds: 300, name: "")))
        inner.latest?.send(.answer(houndify))
        #expect(await Self.next(session) == .answer(houndify))
        #expect(loader.loads.withLock { $0 } == 0, "the recogniser was loaded though Houndify was heard from")
    }

    @Test func speechOutsideTheGrammarGetsHoundifysFailure() async throws {
        let (search, inner, _) = Self.fallback()
        let session = try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true)
        _ = Self.write([Int16](repeating: 0, count: 32_000), to: session)
        session.finish()
        inner.latest?.send(.failed(Self.offline))
        #expect(await Self.next(session) == .failed(Self.offline))
    }

    @Test func theMicrophonesFailureIsNotTheDevicesToAnswer() async throws {
        let (search, inner, loader) = Self.fallback()
        let session = try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true)
        let lost = SearchError.audioInterrupted("the microphone went away")
        inner.latest?.send(.failed(lost))
        #expect(await Self.next(session) == .failed(lost))
        #expect(loader.loads.withLock { $0 } == 0)
    }

    @Test func aTypedCommandIsCarriedOutOfflineFromItsText() async throws {
        let (search, inner, _) = Self.fallback()
        inner.refuseNextStart(Self.offline)
        let session = try search.startTextSearch("what time is it")
        guard case .answer(let answer)? = await Self.next(session) else { Issue.record("no answer"); return }
        #expect(answer.device == DeviceAnswer(failure: .offline, tell: .time))
        let other = try search.startTextSearch("tell me a joke")
        inner.latest?.send(.failed(Self.offline))
        #expect(await Self.next(other) == .failed(Self.offline))
    }

    @Test func aCancelledQuestionTellsNothing() async throws {
        let (search, inner, _) = Self.fallback()
        let session = try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true)
        _ = Self.write(try OfflineRecogniserTests.spoken("what time is it"), to: session)
        session.cancel()
        inner.latest?.send(.failed(Self.offline))
        #expect(await Self.next(session) == nil)
    }
}
