import ControlCore
import FoundationEssentials
import JSONKit
import Testing

/// The control API's vocabulary is one type (ControlCore) for the server and `ctl`'s client: every command is
/// sent as the JSON the server reads back to the same command.
@Suite struct ControlVocabularyTests {
    /// Each case, each way it can be sent, with the JSON it is sent as (docs/control-api.md).
    static let wire: [(ControlCommand, String)] = [
        (.listen, #"{"command":"listen"}"#),
        (.stop, #"{"command":"stop"}"#),
        (.text("what time is it"), #"{"command":"text","query":"what time is it"}"#),
        (.say("Dinner is ready."), #"{"command":"say","text":"Dinner is ready."}"#),
        (.mute(true), #"{"command":"mute"}"#),
        (.mute(false), #"{"command":"unmute"}"#),
        (.volume(.to(0)), #"{"command":"volume","percent":0}"#),
        (.volume(.to(30)), #"{"command":"volume","percent":30}"#),
        (.volume(.to(100)), #"{"command":"volume","percent":100}"#),
        (.volume(.step(up: true)), #"{"command":"volume","step":"up"}"#),
        (.volume(.step(up: false)), #"{"command":"volume","step":"down"}"#),
        (.volume(.mute(true)), #"{"command":"volume","sound_off":true}"#),
        (.volume(.mute(false)), #"{"command":"volume","sound_off":false}"#),
        (.status, #"{"command":"status"}"#),
        (.cancelTimer(.id(3)), #"{"command":"cancel_timer","id":3}"#),
        (.cancelTimer(.named("pasta")), #"{"command":"cancel_timer","name":"pasta"}"#),
        (.cancelTimer(.all), #"{"command":"cancel_timer","all":true}"#),
        (.cancelAlarm(.id(1)), #"{"command":"cancel_alarm","id":1}"#),
        (.cancelAlarm(.named("wake up")), #"{"command":"cancel_alarm","name":"wake up"}"#),
        (.cancelAlarm(.all), #"{"command":"cancel_alarm","all":true}"#),
        (.clearConversation, #"{"command":"clear"}"#),
        (.wake, #"{"command":"wake"}"#),
        (.voices, #"{"command":"voices"}"#),
        (.forget(phrase: "hey kitchen"), #"{"command":"forget","phrase":"hey kitchen"}"#),
        (.forget(phrase: nil), #"{"command":"forget","negatives":true}"#),
        (.reloadHousehold, #"{"command":"reload_household"}"#),
        (.enroll(phrase: nil), #"{"command":"enroll"}"#),
        (.enroll(phrase: "hey kitchen"), #"{"command":"enroll","phrase":"hey kitchen"}"#),
    ]

    /// The case, whatever it carries: the switch has no default, so a new case cannot compile without a line here,
    /// and the count below then asks for its JSON above.
    static func kind(_ command: ControlCommand) -> String {
        switch command {
        case .listen: "listen"
        case .stop: "stop"
        case .text: "text"
        case .say: "say"
        case .mute: "mute"
        case .volume: "volume"
        case .status: "status"
        case .cancelTimer: "cancelTimer"
        case .cancelAlarm: "cancelAlarm"
        case .clearConversation: "clearConversation"
        case .wake: "wake"
        case .voices: "voices"
        case .forget: "forget"
        case .reloadHousehold: "reloadHousehold"
        case .enroll: "enroll"
        }
    }

    static func json(_ text: String) throws -> JSONValue { try JSONValue(parsing: Data(text.utf8)) }

    @Test func everyCaseIsSentAsTheServerReadsIt() throws {
        #expect(Set(Self.wire.map { Self.kind($0.0) }).count == 15)
        for (command, expected) in Self.wire {
            // As docs/control-api.md writes it (and ctl sent it by hand before).
            #expect(command.json == (try Self.json(expected)), "\(command)")
            // Read back by the server, as the value and as the bytes that go out.
            #expect(try ControlCommand.parse(command.json) == command)
            #expect(try ControlCommand.parse(try Self.json(command.json.asciiJSON())) == command)
        }
        // Every name is sent by some command; `timers` only as `ctl timers` names the status.
        #expect(Set(Self.wire.map(\.0.name)) == Set(ControlCommand.Name.allCases).subtracting([.timers]))
        #expect(ControlCommand.status.json(named: .timers) == (try Self.json(#"{"command":"timers"}"#)))
        #expect(try ControlCommand.parse(ControlCommand.status.json(named: .timers)) == .status)
    }

    @Test func theNamesAreTheDocumentedOnes() {
        #expect(ControlCommand.names == ["listen", "stop", "text", "say", "mute", "unmute", "volume", "status", "timers",
                                         "cancel_timer", "cancel_alarm", "clear", "wake", "voices", "forget", "reload_household", "enroll"])
    }
}
