import Foundation
import JSONKit
import Testing
import TestSupport
@testable import Houndify
import HoundifyCore
@testable import LocalHoundify

/// Real libcurl against the project's own service on 127.0.0.1.
enum Credentials {
    static let id = SigningTests.vectors[0].clientID
    static let key = SigningTests.vectors[0].clientKey
    static let wrongKey = SigningTests.vectors[1].clientKey
}

struct ServiceFixture {
    let service: LocalHoundifyService
    let port: Int

    static func start(fault: LocalServiceConfiguration.Fault = .none, now: @escaping @Sendable () -> Date = Date.init) async throws -> ServiceFixture {
        var settings = LocalServiceConfiguration(clientID: Credentials.id, clientKey: Credentials.key, defaultTranscript: "what time is it")
        settings.fault = fault
        let service = try LocalHoundifyService(configuration: settings, answers: AnswerBook(now: now))
        let port = try await service.start(port: 0)
        return ServiceFixture(service: service, port: port)
    }

    func client(key: String = Credentials.key, responseTimeoutMS: Int = 10_000, format: AudioUploadFormat = .pcm,
                conversation: ConversationStore = ConversationStore()) throws -> HoundifyClient {
        let profile = ClientProfile(clientID: Credentials.id, userID: "test_user", deviceID: "test-device",
                                    latitude: 48.8566, longitude: 2.3522, timeZone: "Asia/Tokyo")
        return try HoundifyClient(configuration: HoundifyClientConfiguration(
            endpoint: "http://127.0.0.1:\(port)", clientKey: key, profile: profile, connectTimeoutMS: 2_000,
            responseTimeoutMS: responseTimeoutMS, audioFormat: format), conversation: conversation)
    }
}

/// Speech-like audio: a 300 Hz tone at about -12 dBFS, and silence, in 20 ms frames of 16 kHz.
enum TestAudio {
    static func voiced(ms: Int) -> [Int16] { (0..<(ms * 16)).map { Int16(8000 * sin(Double($0) * 2 * .pi * 300 / 16000)) } }
    static func silence(ms: Int) -> [Int16] { [Int16](repeating: 0, count: ms * 16) }
}

/// Waits for the first event matching `predicate`, failing after `seconds` instead of hanging.
func nextEvent(_ iterator: inout AsyncStream<VoiceSearchEvent>.Iterator, seconds: Double = 10,
               where predicate: (VoiceSearchEvent) -> Bool) async -> VoiceSearchEvent? {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        guard let event = await iterator.next() else { return nil }
        if predicate(event) { return event }
    }
    return nil
}

@Suite(.serialized) struct ClientServiceTests {
    @Test func textQueryIsAnsweredInTheRequestsTimeZone() async throws {
        let noon = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01 00:00 UTC = 09:00 in Tokyo
        let fixture = try await ServiceFixture.start(now: { noon })
        defer { Task { await fixture.service.stop() } }
        let response = try await fixture.client().textSearch("what time is it")
        #expect(response.best?.commandKind == "InformationCommand")
        #expect(response.best?.textToSpeak == "It is 9:00 AM.")
        #expect(response.transcript == "what time is it")
    }

    /// The weather is said for where the speaker is (its Latitude and Longitude), not for the recorded answer's town.
    @Test func weatherIsAnsweredForTheRequestsPosition() async throws {
        let fixture = try await ServiceFixture.start()
        defer { Task { await fixture.service.stop() } }
        let response = try await fixture.client().textSearch("what is the weather")
        #expect(response.best?.textToSpeak == "The weather is 84 degrees and mostly cloudy near 48.86 north, 2.35 east.")
        #expect(response.best?.commandKind == "WeatherCommand")

        let book = AnswerBook()
        let metric = book.answer(transcript: "weather", requestInfo: ["Latitude": -33.87, "Longitude": -151.21, "UnitPreference": "METRIC"], voice: false)
        #expect(metric["AllResults"]?[0]?["WrittenResponse"] == "The weather is 29 °C and mostly cloudy near 33.87° S, 151.21° W.")
        // No position: the recorded answer, as Houndify would place the speaker by its address.
        let nowhere = book.answer(transcript: "weather", requestInfo: [:], voice: false)
        #expect(nowhere["AllResults"]?[0]?["SpokenResponseLong"]?.stringValue?.hasSuffix("near Prosper Texas.") == true)
    }

    @Test func conversationStateIsCarriedIntoTheNextQuery() async throws {
        let fixture = try await ServiceFixture.start()
        defer { Task { await fixture.service.stop() } }
        let client = try fixture.client()
        let first = try await client.textSearch("set a timer")
        #expect(first.best?.autoListen == true)
        #expect(first.best?.textToSpeak == "For how long?")
        #expect(client.conversation.current?["LocalServiceTurn"] == .int(1))
        // Only the state sent with it lets the service understand the follow-up.
        let second = try await client.textSearch("five minutes")
        #expect(second.best?.json["TimerCommandKind"] == "TimerSetCommand")
        #expect(second.best?.json["NativeData"]?["Timer"]?["DurationInSeconds"] == 300)
        #expect(second.best?.dynamicResponse("ClientActionSucceededResult")?.text(long: true) == "Your timer is set for 5 minutes.")
        #expect(client.conversation.current?["LocalServiceTurn"] == .int(2))
        try client.conversation.clear()
        let fresh = try await client.textSearch("five minutes")
        #expect(fresh.best?.commandKind == "NoResultCommand")
    }

    @Test func voiceQueryStreamsPartialsBeforeTheUploadEnds() async throws {
        let fixture = try await ServiceFixture.start()
        defer { Task { await fixture.service.stop() } }
        let search = try fixture.client().startVoiceSearch(extra: ["LocalServiceTranscript": "what is the weather"])
        var events = search.events.makeAsyncIterator()
        #expect(search.write(TestAudio.silence(ms: 200)))
        #expect(search.write(TestAudio.voiced(ms: 500)))
        // The upload is still open: a partial with words must arrive now, over the same connection.
        let partial = await nextEvent(&events) {
            if case .partialTranscript(let p) = $0 { return !p.partialTranscript.isEmpty }
            return false
        }
        guard case .partialTranscript(let p)? = partial else { Issue.record("no partial transcript while uploading"); return }
        #expect("what is the weather".hasPrefix(p.partialTranscript))
        #expect(search.write(TestAudio.voiced(ms: 400)))
        search.finish()
        #expect(!search.write(TestAudio.voiced(ms: 20)))  // audio after finish is refused
        let response = try await search.response()
        #expect(response.transcript == "what is the weather")
        #expect(response.best?.commandKind == "WeatherCommand" || response.best?.commandKind == "InformationCommand")
    }

    @Test(arguments: [AudioUploadFormat.pcm, .speex])
    func safeToStopAudioEndsTheUpload(format: AudioUploadFormat) async throws {
        let fixture = try await ServiceFixture.start()
        defer { Task { await fixture.service.stop() } }
        let search = try fixture.client(format: format).startVoiceSearch()
        var events = search.events.makeAsyncIterator()
        search.write(TestAudio.voiced(ms: 1000))
        // Feed silence one frame at a time, waiting for each to be answered or not, as a microphone would.
        var silentFrames = 0
        while search.write(TestAudio.silence(ms: 20)) {
            silentFrames += 1
            if silentFrames > 400 { break }
            if silentFrames % 10 == 0 { await Task.yield() }
            if silentFrames >= 50 {
                // The service wants 0.7 s of silence; from here on wait for its answer before sending more.
                let ended = await nextEvent(&events, seconds: 5) { if case .audioEnded = $0 { return true }; return false }
                #expect(ended == .audioEnded(.safeToStopAudio))
                break
            }
        }
        #expect(!search.write(TestAudio.silence(ms: 20)))
        let response = try await search.response()  // no finish(): SafeToStopAudio ended the body
        #expect(response.transcript == "what time is it")
        #expect(response.best?.textToSpeak.hasPrefix("It is ") == true)
    }

    @Test func wrongKeyIsAnAuthenticationFailure() async throws {
        let fixture = try await ServiceFixture.start()
        defer { Task { await fixture.service.stop() } }
        let client = try fixture.client(key: Credentials.wrongKey)
        await #expect(throws: HoundifyError.authenticationFailed(httpStatus: 403, body: "Authentication failed: invalid client ID or signature\n")) {
            try await client.textSearch("what time is it")
        }
        let search = try client.startVoiceSearch()
        search.write(TestAudio.voiced(ms: 200))
        search.finish()
        await #expect(throws: HoundifyError.authenticationFailed(httpStatus: 403, body: "Authentication failed: invalid client ID or signature\n")) {
            try await search.response()
        }
    }

    @Test func serverClosingMidStreamIsNoResponse() async throws {
        let fixture = try await ServiceFixture.start(fault: .closeMidStream)
        defer { Task { await fixture.service.stop() } }
        let search = try fixture.client().startVoiceSearch()
        search.write(TestAudio.voiced(ms: 600))
        let error = await #expect(throws: HoundifyError.self) { try await search.response() }
        guard case .noResponseReceived? = error else { Issue.record("expected NoResponseReceived, got \(String(describing: error))"); return }
        let textError = await #expect(throws: HoundifyError.self) { try await fixture.client().textSearch("what time is it") }
        guard case .noResponseReceived? = textError else { Issue.record("expected NoResponseReceived, got \(String(describing: textError))"); return }
    }

    @Test func serverThatNeverAnswersTimesOut() async throws {
        let fixture = try await ServiceFixture.start(fault: .stall)
        defer { Task { await fixture.service.stop() } }
        let client = try fixture.client(responseTimeoutMS: 300)
        let error = await #expect(throws: HoundifyError.self) { try await client.textSearch("what time is it") }
        guard case .connectionTimeout? = error else { Issue.record("expected ConnectionTimeout, got \(String(describing: error))"); return }
        let search = try client.startVoiceSearch()
        search.write(TestAudio.voiced(ms: 200))
        search.finish()
        let voiceError = await #expect(throws: HoundifyError.self) { try await search.response() }
        guard case .connectionTimeout? = voiceError else { Issue.record("expected ConnectionTimeout, got \(String(describing: voiceError))"); return }
    }

    @Test func refusedConnectionIsAConnectionFailure() async throws {
        // A port bound and not listening: a connection to it is refused, and while the socket is held no other
        // test running beside this one can be given the port (a stopped service's port could be, and its new
        // owner's reset is not a refusal).
        let held = try HeldPort()
        defer { withExtendedLifetime(held) {} }
        let service = try await ServiceFixture.start()
        await service.service.stop()
        let fixture = ServiceFixture(service: service.service, port: held.port)
        let client = try fixture.client()
        let error = await #expect(throws: HoundifyError.self) { try await client.textSearch("what time is it") }
        guard case .connectionFailure(let detail)? = error else { Issue.record("expected ConnectionFailure, got \(String(describing: error))"); return }
        #expect(detail.contains("127.0.0.1") || detail.lowercased().contains("connect"))
        #expect(error?.isConnectivityFailure == true)
    }

    @Test func cancelAbortsARunningSearch() async throws {
        let fixture = try await ServiceFixture.start(fault: .stall)
        defer { Task { await fixture.service.stop() } }
        let search = try fixture.client().startVoiceSearch()
        search.write(TestAudio.voiced(ms: 200))
        search.cancel()
        await #expect(throws: HoundifyError.cancelled) { try await search.response() }
        #expect(!search.write(TestAudio.voiced(ms: 20)))

        let client = try fixture.client()
        let task = Task { try await client.textSearch("what time is it") }
        task.cancel()
        await #expect(throws: HoundifyError.cancelled) { try await task.value }
    }

    @Test func requestsSurviveAServerDroppingKeptAliveConnections() async throws {
        let fixture = try await ServiceFixture.start(fault: .closeAfterResponse)
        defer { Task { await fixture.service.stop() } }
        let client = try fixture.client()
        for _ in 0..<3 {
            #expect(try await client.textSearch("what time is it").best?.commandKind == "InformationCommand")
            let search = try client.startVoiceSearch()
            search.write(TestAudio.voiced(ms: 300))
            search.finish()
            #expect(try await search.response().transcript == "what time is it")
        }
    }

    @Test func inBandErrorStatusIsAServerStatusError() async throws {
        let fixture = try await ServiceFixture.start(fault: .statusError)
        defer { Task { await fixture.service.stop() } }
        let expected = HoundifyError.serverStatusError(message: "Simulated failure of the local service")
        await #expect(throws: expected) { try await fixture.client().textSearch("what time is it") }
        let search = try fixture.client().startVoiceSearch()
        search.write(TestAudio.voiced(ms: 300))
        search.finish()
        await #expect(throws: expected) { try await search.response() }
    }

    @Test func noSpeechGivesNoResult() async throws {
        let fixture = try await ServiceFixture.start()
        defer { Task { await fixture.service.stop() } }
        let search = try fixture.client().startVoiceSearch()
        search.write(TestAudio.silence(ms: 500))
        search.finish()
        let response = try await search.response()
        #expect(response.transcript == nil)
        #expect(response.best?.commandKind == "NoResultCommand")
    }
}
