import Foundation
import JSONKit
import LocalHoundify
import Testing
import TestSupport
@testable import Houndify

/// A recorded HoundServer message from Fixtures/NAME.json.
func fixture(_ name: String) throws -> Data {
    let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"))
    return try Data(contentsOf: url)
}

/// The recorded weather response: the copy compiled into LocalHoundify, which the local service answers with.
let weatherResult = Data(weatherFixtureJSON.utf8)

@Suite(.ownThread) struct JSONStreamScannerTests {
    @Test func splitsExampleMessagesHoweverTheBytesArrive() throws {
        let fixtures = try ["partial-transcript", "result-time-query", "result-noresult", "error"].map(fixture) + [weatherResult]
        var stream = Data()
        for message in fixtures { stream += message + Data("\r\n".utf8) }
        // Every cut size, from one byte at a time to everything at once.
        for piece in [1, 7, 100, 4096, stream.count] {
            var scanner = JSONStreamScanner()
            var messages: [Data] = []
            var offset = 0
            while offset < stream.count {
                let end = min(offset + piece, stream.count)
                messages += try scanner.feed(stream[offset..<end])
                offset = end
            }
            #expect(messages.count == fixtures.count)
            #expect(!scanner.hasPartialMessage)
            for (message, expected) in zip(messages, fixtures) {
                #expect(try JSONValue(parsing: message) == JSONValue(parsing: expected))
            }
        }
    }

    @Test func skipsByteCountPrefixLinesAndHandlesBracesInStrings() throws {
        var scanner = JSONStreamScanner()
        let text = "54\n{\"a\":\"}{\\\"\",\"b\":[{\"c\":1}]}\n12\r\n{\"d\":\"\\\\\"}"
        let messages = try scanner.feed(Array(text.utf8))
        #expect(messages.map { String(decoding: $0, as: UTF8.self) } == [#"{"a":"}{\"","b":[{"c":1}]}"#, #"{"d":"\\"}"#])
    }

    @Test func truncatedStreamIsNoticed() throws {
        var scanner = JSONStreamScanner()
        let data = try fixture("result-time-query")
        #expect(try scanner.feed(data.prefix(data.count / 2)).isEmpty)
        #expect(scanner.hasPartialMessage)
    }

    @Test func nonJSONIsAnError() {
        var scanner = JSONStreamScanner()
        #expect(throws: JSONStreamScanner.ScanError.unexpectedByte(UInt8(ascii: "I"), offset: 0)) {
            try scanner.feed(Array("Invalid ID or Key".utf8))
        }
    }

    @Test func hugeMessageIsRefusedNotBuffered() {
        var scanner = JSONStreamScanner(maxMessageBytes: 1024)
        let huge = "{\"x\":\"" + String(repeating: "a", count: 5000)
        #expect(throws: JSONStreamScanner.ScanError.messageTooLarge(limit: 1024)) { try scanner.feed(Array(huge.utf8)) }
    }
}

@Suite struct ModelTests {
    /// A partial transcript whose DurationMS does not fit an integer: `voice --json` printed it through Int64(...)
    /// and crashed (found by Tests/fuzz, FuzzStream). It is kept and written back as the number it was.
    @Test(arguments: ["1e300", "-1e300", "9.3e18", "12.5"])
    func aPartialWithAnyDurationIsPrinted(duration: String) throws {
        let raw = Data("{\"Format\":\"SoundHoundVoiceSearchParialTranscript\",\"PartialTranscript\":\"what\",\"DurationMS\":\(duration)}".utf8)
        guard case .partialTranscript(let p) = try HoundMessage.parse(raw) else { Issue.record("not a partial"); return }
        let printed = try JSONValue(parsing: Data(p.json.asciiJSON().utf8))
        #expect(printed["DurationMS"]?.doubleValue == Double(duration))
        #expect(printed["PartialTranscript"] == "what")
    }

    @Test func timeQueryResult() throws {
        guard case .result(let r) = try HoundMessage.parse(fixture("result-time-query")) else { Issue.record("not a result"); return }
        #expect(r.status == "OK" && !r.isError)
        #expect(r.best?.commandKind == "InformationCommand")
        #expect(r.best?.textToSpeak == "It is 8:57 PM the previous day in Toronto.")
        #expect(r.best?.conversationState?["ConversationStateTime"] == .int(1580781434))
        #expect(r.queryID != nil)
        #expect(r.raw == (try fixture("result-time-query")))
    }

    @Test func noResultSpeaksTheLongResponse() throws {
        guard case .result(let r) = try HoundMessage.parse(fixture("result-noresult")) else { Issue.record("not a result"); return }
        #expect(r.best?.commandKind == "NoResultCommand")
        #expect(r.best?.response.spokenResponse == "")
        #expect(r.best?.textToSpeak == "Didn't get that!")
        #expect(r.transcript == "call Milin Patel")
    }

    @Test func weatherAndErrorResults() throws {
        guard case .result(let w) = try HoundMessage.parse(weatherResult) else { Issue.record("not a result"); return }
        #expect(!w.isError && !(w.best?.textToSpeak.isEmpty ?? true))
        guard case .result(let e) = try HoundMessage.parse(fixture("error")) else { Issue.record("not a result"); return }
        #expect(e.isError)
        #expect(e.errorMessage == "Unable to decode the audio: unrecognized audio format.")
    }

    @Test func bothPartialTranscriptSpellingsAreAccepted() throws {
        for format in [HoundFormat.partialTranscriptLegacy, HoundFormat.partialTranscript] {
            let text = #"{"Format":"\#(format)","FormatVersion":"1.0","PartialTranscript":"what time","DurationMS":880,"Done":false,"SafeToStopAudio":true}"#
            #expect(try HoundMessage.parse(Data(text.utf8)) == .partialTranscript(
                PartialTranscript(partialTranscript: "what time", durationMS: 880, done: false, safeToStopAudio: true, format: format)))
        }
    }

    @Test func malformedMessagesMapToSDKErrors() {
        #expect(throws: HoundifyError.parseFailed(detail: "a message is not valid JSON: {\"Format\":")) {
            try HoundMessage.parse(Data("{\"Format\":".utf8))
        }
        #expect(throws: HoundifyError.invalidResponse(detail: "a message has no Format")) { try HoundMessage.parse(Data("{}".utf8)) }
        #expect(throws: HoundifyError.invalidResponse(detail: "result has no Status")) {
            try HoundMessage.parse(Data(#"{"Format":"HoundQueryResult"}"#.utf8))
        }
        #expect(throws: HoundifyError.invalidResponse(detail: "a result has no CommandKind")) {
            try HoundMessage.parse(Data(#"{"Format":"HoundQueryResult","Status":"OK","AllResults":[{}]}"#.utf8))
        }
    }

    @Test func httpStatusesMapToSDKErrors() {
        #expect(SearchSession.error(status: 403, body: Array("Invalid ID or Key".utf8)) == .authenticationFailed(httpStatus: 403, body: "Invalid ID or Key"))
        #expect(SearchSession.error(status: 401, body: []) == .authenticationFailed(httpStatus: 401, body: ""))
        #expect(SearchSession.error(status: 400, body: Array(#"{"Status":"Error","ErrorMessage":"bad RequestInfo"}"#.utf8)) == .serverStatusError(message: "HTTP 400: bad RequestInfo"))
        #expect(SearchSession.error(status: 502, body: Array("Bad Gateway".utf8)) == .httpError(status: 502, body: "Bad Gateway"))
    }
}

@Suite struct ConversationStoreTests {
    @Test func persistsReloadsAndClears() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-conv-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("state/conversation.json")
        let store = ConversationStore(fileURL: file)
        #expect(store.current == nil)
        let state: JSONValue = ["ConversationStateTime": 5, "History": ["x"]]
        try store.set(state)
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(ConversationStore(fileURL: file).current == state)  // a restart continues the conversation
        try store.clear()
        #expect(store.current == nil)
        #expect(ConversationStore(fileURL: file).current == nil)
    }

    @Test func corruptFileStartsANewConversation() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hs-conv-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("{not json".utf8).write(to: file)
        let store = ConversationStore(fileURL: file)
        #expect(store.current == nil)
        #expect(store.loadProblem?.contains("not valid JSON") == true)
    }
}
