import Testing
import TestSupport
@testable import OwnCommands
import SpeakerCore
import Timers

@Suite(.ownThread) struct OwnCommandsTests {
    /// What people say, and what the speaker does with it.
    static let said: [(String, OwnAction)] = [
        ("set a timer for five minutes", .client(.timer(.set(seconds: 300, name: "")))),
        ("timer for ten seconds", .client(.timer(.set(seconds: 10, name: "")))),
        ("set a pasta timer for twelve minutes", .client(.timer(.set(seconds: 720, name: "pasta")))),
        ("start a twenty five minute timer", .client(.timer(.set(seconds: 1500, name: "")))),
        ("set a timer for an hour and a half", .client(.timer(.set(seconds: 5400, name: "")))),
        ("set a timer for two hours and ten minutes", .client(.timer(.set(seconds: 7800, name: "")))),
        ("set a timer for one and a half minutes", .client(.timer(.set(seconds: 90, name: "")))),
        ("set a timer for half an hour", .client(.timer(.set(seconds: 1800, name: "")))),
        ("set a timer for a minute", .client(.timer(.set(seconds: 60, name: "")))),
        ("set a timer for ninety nine seconds", .client(.timer(.set(seconds: 99, name: "")))),
        ("remind me in three hours", .client(.timer(.set(seconds: 10800, name: "")))),
        ("cancel the timer", .client(.timer(.cancel(.the)))),
        ("cancel the egg timer", .client(.timer(.cancel(.named("egg"))))),
        ("stop the ten minute timer", .client(.timer(.cancel(.length(seconds: 600))))),
        ("delete the second timer", .client(.timer(.cancel(.position(2))))),
        ("cancel all timers", .client(.timer(.cancel(.all)))),
        ("how much time is left", .client(.timer(.timeLeft(.the)))),
        ("how long is left on the rice timer", .client(.timer(.timeLeft(.named("rice"))))),
        ("add five minutes", .client(.timer(.addTime(seconds: 300, .the)))),
        ("add two minutes to the bread timer", .client(.timer(.addTime(seconds: 120, .named("bread"))))),
        ("pause the timer", .client(.timer(.pause(.the)))),
        ("resume the timer", .client(.timer(.resume(.the)))),
        ("reset the timer", .client(.timer(.reset(.the)))),
        ("set an alarm for seven a.m.", .client(.alarm(.set(minuteOfDay: 7 * 60, days: [], name: "")))),
        ("set an alarm for seven thirty", .client(.alarm(.set(minuteOfDay: 7 * 60 + 30, days: [], name: "")))),
        ("wake me up at half past six", .client(.alarm(.set(minuteOfDay: 6 * 60 + 30, days: [], name: "")))),
        ("set an alarm for six in the morning", .client(.alarm(.set(minuteOfDay: 6 * 60, days: [], name: "")))),
        ("set an alarm for quarter to eight p.m.", .client(.alarm(.set(minuteOfDay: 19 * 60 + 45, days: [], name: "")))),
        ("set an alarm for three", .client(.alarm(.set(minuteOfDay: 15 * 60, days: [], name: "")))),
        ("set an alarm for seven o five", .client(.alarm(.set(minuteOfDay: 7 * 60 + 5, days: [], name: "")))),
        ("set an alarm for noon", .client(.alarm(.set(minuteOfDay: 12 * 60, days: [], name: "")))),
        ("set an alarm for twelve a.m.", .client(.alarm(.set(minuteOfDay: 0, days: [], name: "")))),
        ("cancel the alarm", .client(.alarm(.cancel(.the)))),
        ("cancel the seven thirty alarm", .client(.alarm(.cancel(.at(minuteOfDay: 7 * 60 + 30))))),
        ("delete all alarms", .client(.alarm(.cancel(.all)))),
        ("what alarms do i have", .client(.alarm(.list))),
        ("turn it up", .client(.volume(.step(up: true)))),
        ("volume down", .client(.volume(.step(up: false)))),
        ("quieter", .client(.volume(.step(up: false)))),
        ("turn it down by twenty", .client(.volume(.by(-20)))),
        ("set the volume to fifty percent", .client(.volume(.to(50)))),
        ("volume thirty", .client(.volume(.to(30)))),
        ("set the volume to a hundred", .client(.volume(.to(100)))),
        ("mute", .client(.volume(.mute(true)))),
        ("unmute the sound", .client(.volume(.mute(false)))),
        ("stop", .local(.stop)),
        ("never mind", .local(.stop)),
        ("what's your ip address", .local(.ipAddress)),
        ("what time is it", .tellTime),
        ("what's the date today", .tellDate),
        ("what day is it", .tellDate),
    ]

    @Test func whatPeopleSayIsWhatTheSpeakerDoes() {
        for (words, action) in Self.said {
            #expect(OwnCommands.match(words) == action, "\"\(words)\"")
        }
    }

    /// The grammar and the command table cannot drift apart: every thing the speaker carries out has phrases
    /// that make it, unless it is listed as not heard offline with the reason.
    @Test func everyCommandTheSpeakerCarriesOutHasItsPhrases() {
        let heard = Set(Self.said.map(\.1.kind))
        for kind in OwnAction.Kind.allCases where OwnAction.Kind.notOffline[kind] == nil {
            #expect(OwnCommands.table.contains { $0.kind == kind }, "no phrases for \(kind)")
            #expect(heard.contains(kind), "no example of \(kind) in this test")
        }
        for command in OwnCommands.table {
            #expect(OwnAction.Kind.notOffline[command.kind] == nil)
        }
    }

    @Test func outsideTheGrammarNothingIsDone() {
        for words in ["what's the weather", "tell me a story", "set a timer", "set a timer for", "set an alarm for thirteen",
                      "set the volume to two hundred", "stop the music now", "", "timer", "set an alarm for half past"] {
            #expect(OwnCommands.match(words) == nil, "\"\(words)\"")
        }
    }

    @Test func numbersAsPeopleSayThem() {
        #expect(Slot.number(["twenty", "five"]) == 25)
        #expect(Slot.number(["a", "hundred"]) == 100)
        #expect(Slot.number(["ninety", "nine"]) == 99)
        #expect(Slot.number(["banana"]) == nil)
        #expect(Slot.seconds(["an", "hour", "and", "a", "half"]) == 5400)
        #expect(Slot.seconds(["half", "a", "minute"]) == 30)
        #expect(Slot.seconds(["ten"]) == nil)
        #expect(Slot.minuteOfDay(["quarter", "to", "one"]) == 12 * 60 + 45)
        #expect(Slot.minuteOfDay(["eleven", "p.m."]) == 23 * 60)
        #expect(Slot.minuteOfDay(["midnight"]) == 0)
    }

    /// The grammar the recogniser reads is the table's: each example is in it, word for word.
    @Test func theGrammarIsWrittenFromTheTable() {
        let grammar = OwnCommands.jsgf
        #expect(grammar.hasPrefix("#JSGF V1.0;"))
        for slot in Slot.allCases { #expect(grammar.contains("<\(slot.rawValue)> = ")) }
        for (words, _) in Self.said {
            for word in words.split(separator: " ") { #expect(OwnCommands.words.contains(String(word)), "\(word)") }
        }
        #expect(!OwnCommands.words.contains("weather"))
    }

    @Test func aMalformedTemplateIsRefusedWithWhy() {
        #expect(throws: PatternError.self) { try Pattern.parse("set (a timer") }
        #expect(throws: PatternError.self) { try Pattern.parse("set a <timer>") }
        #expect(throws: PatternError.self) { try Pattern.parse("Set a timer") }
        #expect(throws: PatternError.self) { try Pattern.parse("set [a | ] timer") }
    }
}
