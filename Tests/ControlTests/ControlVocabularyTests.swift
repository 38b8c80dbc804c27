import ControlCore
import FoundationEssentials
import JSONKit
import Testing
import TestSupport

/// The control API's vocabulary is one type (ControlCore) for the server and `ctl`'s client: every command is
/// sent as the JSON the server reads back to the same command, and every name the server takes has a `ctl` word.
@Suite(.ownThread) struct ControlVocabularyTests {
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
        (.ring(on: false, percent: nil), #"{"command":"ring","on":false}"#),
        (.ring(on: nil, percent: 40), #"{"command":"ring","percent":40}"#),
        (.ring(on: true, percent: 100), #"{"command":"ring","on":true,"percent":100}"#),
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
        case .ring: "ring"
        }
    }

    static func json(_ text: String) throws -> JSONValue { try JSONValue(parsing: Data(text.utf8)) }

    @Test func everyCaseIsSentAsTheServerReadsIt() throws {
        #expect(Set(Self.wire.map { Self.kind($0.0) }).count == 16)
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

    /// A phrase to teach is a person's words: a NUL, an escape or a bidirectional override is refused, named.
    @Test func anEnrollPhraseOfControlOrFormatCharactersIsRefused() throws {
        for phrase in ["hey\u{0}kitchen", "hey \u{202E}nehctik", "hey\u{1B}[2Jkitchen"] {
            #expect(throws: ControlCommand.Problem.self) { try ControlCommand.parse(["command": "enroll", "phrase": .string(phrase)]) }
        }
        #expect(try ControlCommand.parse(["command": "enroll", "phrase": "hey kitchen"]) == .enroll(phrase: "hey kitchen"))
    }

    @Test func theNamesAreTheDocumentedOnes() {
        #expect(ControlCommand.names == ["listen", "stop", "text", "say", "mute", "unmute", "volume", "status", "timers",
                                         "cancel_timer", "cancel_alarm", "clear", "wake", "voices", "forget", "reload_household", "enroll", "ring"])
        #expect(ControlCommand.usage == "listen, stop, text QUESTION, say WORDS, mute, unmute, volume N|up|down|off|on, status, "
                + "timers, cancel-timer ID|NAME|all, cancel-alarm ID|NAME|all, clear, wake, voices, forget PHRASE|--negatives, "
                + "reload-household, enroll [--phrase TEXT], ring on|off|PERCENT")
    }

    /// Each `ctl` line, the command it means and the JSON it sends (as `ctl` sent before it used this type).
    static let lines: [(String, ControlCommand.Name, ControlCommand, String)] = [
        ("listen", .listen, .listen, #"{"command":"listen"}"#),
        ("stop", .stop, .stop, #"{"command":"stop"}"#),
        ("text what time is it", .text, .text("what time is it"), #"{"command":"text","query":"what time is it"}"#),
        ("say dinner is ready", .say, .say("dinner is ready"), #"{"command":"say","text":"dinner is ready"}"#),
        ("mute", .mute, .mute(true), #"{"command":"mute"}"#),
        ("unmute", .unmute, .mute(false), #"{"command":"unmute"}"#),
        ("volume 30", .volume, .volume(.to(30)), #"{"command":"volume","percent":30}"#),
        ("volume 0", .volume, .volume(.to(0)), #"{"command":"volume","percent":0}"#),
        ("volume up", .volume, .volume(.step(up: true)), #"{"command":"volume","step":"up"}"#),
        ("volume down", .volume, .volume(.step(up: false)), #"{"command":"volume","step":"down"}"#),
        ("volume off", .volume, .volume(.mute(true)), #"{"command":"volume","sound_off":true}"#),
        ("volume on", .volume, .volume(.mute(false)), #"{"command":"volume","sound_off":false}"#),
        ("status", .status, .status, #"{"command":"status"}"#),
        ("timers", .timers, .status, #"{"command":"timers"}"#),
        ("cancel-timer 3", .cancelTimer, .cancelTimer(.id(3)), #"{"command":"cancel_timer","id":3}"#),
        ("cancel-timer pasta", .cancelTimer, .cancelTimer(.named("pasta")), #"{"command":"cancel_timer","name":"pasta"}"#),
        ("cancel-timer all", .cancelTimer, .cancelTimer(.all), #"{"command":"cancel_timer","all":true}"#),
        ("cancel-alarm 1", .cancelAlarm, .cancelAlarm(.id(1)), #"{"command":"cancel_alarm","id":1}"#),
        ("cancel-alarm wake up", .cancelAlarm, .cancelAlarm(.named("wake up")), #"{"command":"cancel_alarm","name":"wake up"}"#),
        ("cancel-alarm all", .cancelAlarm, .cancelAlarm(.all), #"{"command":"cancel_alarm","all":true}"#),
        ("clear", .clear, .clearConversation, #"{"command":"clear"}"#),
        ("wake", .wake, .wake, #"{"command":"wake"}"#),
        ("voices", .voices, .voices, #"{"command":"voices"}"#),
        ("forget hey kitchen", .forget, .forget(phrase: "hey kitchen"), #"{"command":"forget","phrase":"hey kitchen"}"#),
        ("forget --negatives", .forget, .forget(phrase: nil), #"{"command":"forget","negatives":true}"#),
        ("reload-household", .reloadHousehold, .reloadHousehold, #"{"command":"reload_household"}"#),
        ("enroll", .enroll, .enroll(phrase: nil), #"{"command":"enroll"}"#),
        ("enroll --phrase hey kitchen", .enroll, .enroll(phrase: "hey kitchen"), #"{"command":"enroll","phrase":"hey kitchen"}"#),
        ("ring off", .ring, .ring(on: false, percent: nil), #"{"command":"ring","on":false}"#),
        ("ring on", .ring, .ring(on: true, percent: nil), #"{"command":"ring","on":true}"#),
        ("ring 25", .ring, .ring(on: nil, percent: 25), #"{"command":"ring","percent":25}"#),
        ("ring 25%", .ring, .ring(on: nil, percent: 25), #"{"command":"ring","percent":25}"#),
    ]

    func words(_ line: String) -> [String] { line.split(separator: " ").map(String.init) }

    @Test func everyCtlLineMeansItsCommand() throws {
        for (line, name, command, json) in Self.lines {
            let (readName, read) = try ControlCommand.parse(words: words(line))
            #expect(readName == name && read == command, "\(line)")
            #expect(read.json(named: readName) == (try Self.json(json)), "\(line)")
            #expect(try ControlCommand.parse(read.json(named: readName)) == command, "\(line)")
        }
    }

    /// The server's vocabulary and `ctl`'s cannot drift apart: every name has a word, in the usage, and some line
    /// of `ctl` above sends it.
    @Test func everyNameHasACtlWord() throws {
        for name in ControlCommand.Name.allCases {
            #expect(ControlCommand.Name(word: name.word) == name)
            #expect(ControlCommand.usage.split(separator: ", ").contains { $0.split(separator: " ").first.map(String.init) == name.word }, "\(name)")
            #expect(Self.lines.contains { $0.1 == name && words($0.0).first == name.word }, "\(name): no ctl line sends it")
            // A word with nothing after it in the usage means its name alone; one word more is refused.
            if name.arguments.isEmpty {
                #expect(try ControlCommand.parse(words: [name.word]).command == ControlCommand.parse(["command": .string(name.rawValue)]))
                #expect(problem([name.word, "now"]) == "\(name.word) takes nothing after it")
            }
        }
        #expect(ControlCommand.Name(word: "reload-household") == .reloadHousehold)
        // The wire's names are not words.
        #expect(ControlCommand.Name(word: "cancel_timer") == nil && ControlCommand.Name(word: "reload_household") == nil)
    }

    func problem(_ words: [String]) -> String {
        do { _ = try ControlCommand.parse(words: words); return "" } catch { return "\(error)" }
    }

    @Test func badLinesSayWhatIsWrong() {
        #expect(problem([]) == "a command is needed")
        #expect(problem(["dance"]) == "unknown command \"dance\"")
        #expect(problem(["cancel_timer", "3"]) == "unknown command \"cancel_timer\"")
        #expect(problem(["text"]).hasPrefix("text needs a question"))
        #expect(problem(["say", " "]).hasPrefix("say needs the words"))
        #expect(problem(["volume", "300"]) == "volume takes 0-100, up, down, off or on")
        #expect(problem(["volume"]) == "volume takes 0-100, up, down, off or on")
        #expect(problem(["cancel-alarm"]).hasPrefix("cancel-alarm needs a number"))
        #expect(problem(["forget"]).hasPrefix("forget needs a phrase"))
        for enroll in [["enroll", "--phrase"], ["enroll", "--phrase", " "], ["enroll", "hey", "kitchen"]] {
            #expect(problem(enroll) == "enroll takes nothing (the hot phrase) or --phrase TEXT", "\(enroll)")
        }
        #expect(problem(["timers", "all"]) == "timers takes nothing after it")
        for ring in [["ring"], ["ring", "0"], ["ring", "101"], ["ring", "bright"]] {
            #expect(problem(ring) == "ring takes on, off or a brightness of 1-100", "\(ring)")
        }
    }

    @Test func aRingRequestNeedsOnOrAPercentInRange() {
        func refusal(_ json: JSONValue) -> String {
            do { _ = try ControlCommand.parse(json); return "" } catch { return error.description }
        }
        #expect(refusal(["command": "ring"]).hasPrefix("\"ring\" needs \"on\" (true or false) or \"percent\" (1-100)"))
        #expect(refusal(["command": "ring", "percent": 0]) == "\"percent\" is the ring's brightness, 1 to 100")
        #expect(refusal(["command": "ring", "percent": .int(Int64.max)]) == "\"percent\" is the ring's brightness, 1 to 100")
        #expect(refusal(["command": "ring", "on": "yes"]) == "\"on\" is true or false")
    }
}
