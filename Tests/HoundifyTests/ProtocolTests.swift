import Foundation
import JSONKit
import Testing
@testable import Houndify
import HoundifyCore

/// The three vectors produced by the Python SDK 2.1.4, byte for byte (docs/houndify-protocol.md, "Test vectors").
@Suite struct SigningTests {
    struct Vector: Sendable {
        var clientID, clientKey, userID, requestID: String
        var timeStamp: Int64
        var macHex, requestAuth, clientAuth: String
    }

    static let vectors = [
        Vector(clientID: "AAECAwQFBgcICQoLDA0ODw==",
               clientKey: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw==",
               userID: "test_user", requestID: "deadbeef", timeStamp: 1580278266,
               macHex: "3802f6b891ba2f79bb90c2f7ea061bd678f51a8e65fe69ae4791c6e1ca91a95a",
               requestAuth: "test_user;deadbeef",
               clientAuth: "AAECAwQFBgcICQoLDA0ODw==;1580278266;OAL2uJG6L3m7kML36gYb1nj1Go5l_mmuR5HG4cqRqVo="),
        Vector(clientID: "BzxxptsQRXqv5BlOg7jtIg==",
               clientKey: "-yBFao-02f4jSG2St9wBJktwlbrfBClOc5i94gcsUXabwOUKL1R5nsPoDTJXfKHG6xA1Wn-kye4TOF2Cp8zxFg==",
               userID: "user-42", requestID: "3f1c2a9e-5b7d-4e10-9a2b-0c4d6e8f1a2b", timeStamp: 1700000000,
               macHex: "6d3f282a149a850ad80d39464e6821e69b3ae6932a466a2d6b615613c867d203",
               requestAuth: "user-42;3f1c2a9e-5b7d-4e10-9a2b-0c4d6e8f1a2b",
               clientAuth: "BzxxptsQRXqv5BlOg7jtIg==;1700000000;bT8oKhSahQrYDTlGTmgh5ps65pMqRmota2FWE8hn0gM="),
        Vector(clientID: "DummyClientID3==",
               clientKey: "KdV2aSrR-IVlqjSo1NcKdVMczgYJJ17PtZzYSOe4oeu730wD6f5jZYdSASMGoPR5ujaETXR1zviTB7cqfdHn5w==",
               userID: "speaker_livingroom", requestID: "00000000-0000-4000-8000-000000000000", timeStamp: 1234567890,
               macHex: "a86e053fb228050340b10dd35f5727db0d787082171dc6b480dd2899cef90396",
               requestAuth: "speaker_livingroom;00000000-0000-4000-8000-000000000000",
               clientAuth: "DummyClientID3==;1234567890;qG4FP7IoBQNAsQ3TX1cn2w14cIIXHca0gN0omc75A5Y="),
    ]

    @Test(arguments: vectors)
    func headersMatchTheSDK(_ v: Vector) throws {
        let auth = try HoundAuthenticator(clientID: v.clientID, clientKey: v.clientKey)
        let headers = auth.headers(userID: v.userID, requestID: v.requestID, timeStamp: v.timeStamp)
        #expect(headers.requestAuthentication == v.requestAuth)
        #expect(headers.clientAuthentication == v.clientAuth)
        let mac = Base64URL.decode(String(v.clientAuth.split(separator: ";")[2]))!
        #expect(hex(mac) == v.macHex)
        #expect(auth.verify(requestAuthentication: v.requestAuth, clientAuthentication: v.clientAuth))
    }

    @Test func decodedKeyOfVector2() {
        #expect(hex(Base64URL.decode(Self.vectors[1].clientKey)!) ==
            "fb20456a8fb4d9fe23486d92b7dc01264b7095badf04294e7398bde2072c51769bc0e50a2f54799ec3e80d32577ca1c6eb10355a7fa4c9ee13385d82a7ccf116")
    }

    @Test func verifyRejectsTamperedHeaders() throws {
        let v = Self.vectors[0]
        let auth = try HoundAuthenticator(clientID: v.clientID, clientKey: v.clientKey)
        #expect(!auth.verify(requestAuthentication: "other_user;deadbeef", clientAuthentication: v.clientAuth))
        #expect(!auth.verify(requestAuthentication: v.requestAuth, clientAuthentication: v.clientAuth.replacingOccurrences(of: "1580278266", with: "1580278267")))
        #expect(!auth.verify(requestAuthentication: v.requestAuth, clientAuthentication: "garbage"))
        let other = try HoundAuthenticator(clientID: v.clientID, clientKey: Self.vectors[1].clientKey)
        #expect(!other.verify(requestAuthentication: v.requestAuth, clientAuthentication: v.clientAuth))
    }

    @Test func keyThatIsNotBase64IsRefused() {
        #expect(throws: HoundAuthenticator.KeyError.notBase64URL) {
            try HoundAuthenticator(clientID: "x", clientKey: "not base64 at all!")
        }
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

@Suite struct RequestInfoTests {
    static let profile = ClientProfile(clientID: "AAECAwQFBgcICQoLDA0ODw==", userID: "test_user", deviceID: "hs-dev",
                                       latitude: 48.8566, longitude: 2.3522, positionHorizontalAccuracy: 25,
                                       timeZone: "Europe/Paris", unitPreference: "METRIC", extra: ["Domains": ["Only": "Weather"]])

    @Test func voiceRequestHasTheSDKDefaultsAndLocation() {
        let info = RequestInfoBuilder.build(profile: Self.profile, kind: .voice, requestID: "r1", timeStamp: 42, conversationState: nil)
        #expect(info["ClientID"] == "AAECAwQFBgcICQoLDA0ODw==")
        #expect(info["UserID"] == "test_user")
        #expect(info["RequestID"] == "r1")
        #expect(info["TimeStamp"] == .int(42))
        #expect(info["TimeZone"] == "Europe/Paris")
        #expect(info["ClientVersion"] == .string(HoundifySDK.version))
        #expect(info["DeviceID"] == "hs-dev")
        #expect(info["UnitPreference"] == "METRIC")
        #expect(info["PartialTranscriptsDesired"] == true)
        #expect(info["SDK"] == "hound-speaker")
        #expect(info["SDKVersion"] == .string(HoundifySDK.version))
        #expect(info["Latitude"] == .double(48.8566))
        #expect(info["Longitude"] == .double(2.3522))
        #expect(info["PositionHorizontalAccuracy"] == .double(25))
        #expect(info["Domains"] == ["Only": "Weather"])
        #expect(info["ConversationState"] == nil)
    }

    @Test func textRequestDoesNotAskForPartials() {
        var profile = Self.profile
        profile.latitude = nil
        profile.longitude = nil
        let info = RequestInfoBuilder.build(profile: profile, kind: .text, requestID: "r", timeStamp: 1, conversationState: nil)
        #expect(info["PartialTranscriptsDesired"] == nil)
        #expect(info["Latitude"] == nil && info["PositionHorizontalAccuracy"] == nil)
    }

    @Test func conversationStateAndItsTimeAreSent() {
        let state: JSONValue = ["ConversationStateTime": 1580781434, "History": ["a"]]
        let info = RequestInfoBuilder.build(profile: Self.profile, kind: .text, requestID: "r", timeStamp: 1, conversationState: state)
        #expect(info["ConversationState"] == state)
        #expect(info["ConversationStateTime"] == .int(1580781434))
    }

    @Test func extraKeysOverrideDefaults() {
        let info = RequestInfoBuilder.build(profile: Self.profile, kind: .text, requestID: "r", timeStamp: 1, conversationState: nil,
                                            extra: ["UnitPreference": "US", "LocalServiceTranscript": "hi"])
        #expect(info["UnitPreference"] == "US")
        #expect(info["LocalServiceTranscript"] == "hi")
    }

    @Test func jsonIsASCIIWithExactByteCount() throws {
        let value: JSONValue = ["City": "Zürich ☕", "Quote": "say \"hi\"\n", "N": 3, "D": 2.5, "B": false, "Z": .null]
        let text = value.asciiJSON()
        #expect(text.utf8.allSatisfy { $0 < 0x80 })
        #expect(text == #"{"B":false,"City":"Z\u00fcrich \u2615","D":2.5,"N":3,"Quote":"say \"hi\"\n","Z":null}"#)
        #expect(try JSONValue(parsing: Data(text.utf8)) == value)
    }

    @Test func queryIsPercentEncodedLikePythonQuote() {
        #expect(HoundifyClient.percentEncodeQuery("what time is it & where?") == "what%20time%20is%20it%20%26%20where%3F")
        #expect(HoundifyClient.percentEncodeQuery("a/b+c") == "a/b%2Bc")
        #expect(HoundifyClient.percentEncodeQuery("café") == "caf%C3%A9")
    }

    @Test func headersCarrySignatureAndInfoLength() throws {
        let config = HoundifyClientConfiguration(endpoint: "http://127.0.0.1:1/", clientKey: SigningTests.vectors[0].clientKey,
                                                 profile: Self.profile)
        let client = try HoundifyClient(configuration: config)
        let (headers, body) = client.prepare(kind: .text, extra: ["InputLanguageIETFTag": "en-US"], requestID: "deadbeef", timeStamp: 1580278266)
        #expect(headers.contains("Hound-Request-Authentication: test_user;deadbeef"))
        #expect(headers.contains("Hound-Client-Authentication: AAECAwQFBgcICQoLDA0ODw==;1580278266;OAL2uJG6L3m7kML36gYb1nj1Go5l_mmuR5HG4cqRqVo="))
        #expect(headers.contains("Hound-Request-Info-Length: \(body.count)"))
        #expect(headers.contains("Hound-Input-Language-IETF-Tag: en-US"))
        #expect(client.baseURL == "http://127.0.0.1:1")
    }
}

extension RequestInfoTests {
    /// One SessionID for all of a client's requests (a run of the program), a new RequestID each; another client,
    /// another session.
    @Test func everyRequestCarriesTheSessionID() throws {
        let config = HoundifyClientConfiguration(endpoint: "http://127.0.0.1:1/", clientKey: SigningTests.vectors[0].clientKey,
                                                 profile: Self.profile)
        func info(_ client: HoundifyClient, _ kind: RequestKind) throws -> JSONValue {
            try JSONValue(parsing: Data(client.prepare(kind: kind, extra: [:]).requestInfo))
        }
        let client = try HoundifyClient(configuration: config)
        let first = try info(client, .text), second = try info(client, .voice)
        #expect(first["SessionID"]?.stringValue == client.sessionID)
        #expect(second["SessionID"] == first["SessionID"])
        #expect(second["RequestID"] != first["RequestID"])
        let other = try info(try HoundifyClient(configuration: config), .text)
        #expect(other["SessionID"] != first["SessionID"])
        #expect((client.sessionID.count) >= 32)
    }
}

@Suite struct AudioUploadTests {
    @Test func wavHeadersMatchTheSDK() {
        #expect(hex(WAVStreamHeader.bytes(sampleRate: 16000)) == "524946462400000057415645666d74201000000001000100803e000000f40100020010006461746100000000")
        #expect(hex(WAVStreamHeader.bytes(sampleRate: 8000)) == "524946462400000057415645666d74201000000001000100401f000000fa0000020010006461746100000000")
    }

    @Test func speexHeadersMatchTheSDK() throws {
        #expect(hex(try SpeexUploadEncoder(sampleRate: 16000).header) ==
            "537065657820202073706565782d312e3262657461330000000000000100000050000000803e0000010000000400000001000000ffffffff400100000000000000000000000000000000000000000000")
        #expect(hex(try SpeexUploadEncoder(sampleRate: 8000).header) ==
            "537065657820202073706565782d312e3262657461330000000000000100000050000000401f0000000000000400000001000000ffffffffa00000000000000000000000000000000000000000000000")
    }

    @Test func speexFramesHaveBigEndianLengthsAndTheSDKSizes() throws {
        let tone = (0..<1600).map { Int16(8000 * sin(Double($0) * 2 * .pi * 440 / 16000)) }
        let wb = try SpeexUploadEncoder(sampleRate: 16000)
        var chunks = tone.withUnsafeBufferPointer { wb.encode($0) }
        #expect(chunks.count == 5)  // 1600 samples = five 320-sample frames
        for chunk in chunks {
            #expect(chunk.count == 108)
            #expect(chunk[0] == 0x00 && chunk[1] == 0x6a)
        }
        let nb = try SpeexUploadEncoder(sampleRate: 8000)
        chunks = Array(tone.prefix(250)).withUnsafeBufferPointer { nb.encode($0) }
        #expect(chunks.count == 1 && chunks[0].count == 64 && chunks[0][1] == 0x3e)
        // The 90 samples left over are zero-padded into one last frame.
        #expect(nb.finish().count == 1)
        #expect(nb.finish().isEmpty)
    }

    @Test func speexRoundTripKeepsTheSignal() throws {
        let tone = (0..<3200).map { Int16(8000 * sin(Double($0) * 2 * .pi * 440 / 16000)) }
        let encoder = try SpeexUploadEncoder(sampleRate: 16000)
        let decoder = try #require(SpeexStreamDecoder(header: encoder.header))
        var decoded: [Int16] = []
        for chunk in tone.withUnsafeBufferPointer({ encoder.encode($0) }) {
            #expect(Int(chunk[0]) << 8 | Int(chunk[1]) == chunk.count - 2)
            decoded += try #require(decoder.decode(frame: Array(chunk.dropFirst(2))))
        }
        #expect(decoded.count == tone.count)
        let energy = decoded.suffix(1600).reduce(0.0) { $0 + Double($1) * Double($1) } / 1600
        #expect(energy.squareRoot() > 3000)  // the 5657-RMS tone survives, not silence
    }

    @Test func otherRatesAreRefused() {
        #expect(throws: (any Error).self) { try SpeexUploadEncoder(sampleRate: 44100) }
    }
}
