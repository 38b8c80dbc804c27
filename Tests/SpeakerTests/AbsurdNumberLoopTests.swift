import AudioCore
import BoardCore
import FoundationEssentials
import Glibc
import Houndify
import JSONKit
import LocalHoundify
@testable import Assembly
@testable import HoundifyAnswers
import SpeakerCore
import SpeakerRuntime
import TestSupport
import SpeakerTestKit
import Testing
import Timers

extension SplitMix {
    /// A number as Houndify's JSON (or a damaged file) could hold it, or something that is not a number.
    mutating func number() -> JSONValue {
        switch Int.random(in: 0..<6, using: &self) {
        case 0: .int([Int64.max, Int64.min, -1, 0, 1, 9_999_999_999_999_999, 24, 60, 1440, 86_400, 86_401].randomElement(using: &self)!)
        case 1: .int(Int64.random(in: -100...100_000, using: &self))
        case 2: .int(Int64(bitPattern: next()))
        case 3: .double([1e308, -1e308, .infinity, -.infinity, .nan, 0.5, -0.5, 1e19, 9.2e18, 86_400.4].randomElement(using: &self)!)
        case 4: .double(Double(bitPattern: next()))
        default: [JSONValue.string("nan"), .string("inf"), .string("1e308"), .string("9999999999999999"), .null, .bool(true)]
            .randomElement(using: &self)!
        }
    }
}

/// Houndify's TimerCommand, AlarmCommand and VolumeCommand with numbers from every corner (issue #34): reading them
/// never traps, and what they ask of the timers stays within the limits.
@Suite struct AbsurdCommandTests {
    /// Read saturating at Int32's edge (far beyond the day a timer may run), and refused by the timers in words.
    @Test func addingNinesOfSecondsIsReadWithinInt32() throws {
        let book = AnswerBook()
        let json = book.answer(transcript: "add 9999999999999999 seconds to the pasta timer", requestInfo: ["TimeZone": "UTC"], voice: false)
        let answer = ClientCommandReader().read(try HoundServerResponse(json: json, raw: Data(json.asciiJSON().utf8))).answer
        #expect(answer.action == .timer(.addTime(seconds: Int(Int32.max), .named("pasta"))))
        // The local service itself saturates a product it cannot hold.
        let hours = book.answer(transcript: "add 9999999999999999 hours to the pasta timer", requestInfo: ["TimeZone": "UTC"], voice: false)
        let read = ClientCommandReader().read(try HoundServerResponse(json: hours, raw: Data(hours.asciiJSON().utf8))).answer
        #expect(read.action == .timer(.addTime(seconds: Int(Int32.max), .named("pasta"))))
    }

    @Test func outOfRangeNumbersAreReadWithinLimits() {
        #expect(ClientCommandReader.duration(["DurationInSeconds": .double(1e308)]) == Int(Int32.max))
        #expect(ClientCommandReader.duration(["DurationInSeconds": .double(-.infinity)]) == Int(Int32.min))
        #expect(ClientCommandReader.duration(["Hours": .double(.infinity), "Minutes": .double(-.infinity)]) == Int(Int32.min))  // NaN
        #expect(ClientCommandReader.timerAction("TimerAddTimeCommand", ["TimerCriteria": [["SecondsToAdd": .double(1e300)]]])
                == .addTime(seconds: Int(Int32.max), .the))
        #expect(ClientCommandReader.alarmAction("AlarmSetCommand", ["Alarm": ["Hour": .int(Int64.max), "Minute": 0]])
                == .set(minuteOfDay: -1, days: [], name: ""))
        #expect(ClientCommandReader.alarmAction("AlarmSetCommand", ["Alarm": ["Hour": 7, "Minute": .int(Int64.min)]])
                == .set(minuteOfDay: -1, days: [], name: ""))
        #expect(ClientCommandReader.alarmAction("AlarmUnsetCommand", ["AlarmCriteria": [["Hour": .int(Int64.max)]]]) == .cancel(.at(minuteOfDay: -1)))
        #expect(ClientCommandReader.volumeAction(["CommandType": "AdjustVolume", "VolumeDelta": .double(1e300)]) == .by(100))
        #expect(ClientCommandReader.volumeAction(["CommandType": "SetVolume", "VolumeValue": .double(-1e300)]) == .to(0))
        #expect(ClientCommandReader.volumeAction(["CommandType": "SetVolume", "VolumeValue": .int(Int64.max)]) == .to(100))
    }

    /// A seeded loop of commands: every kind, every number field filled from every corner, applied to a book with
    /// a timer and an alarm in it.
    @Test func randomCommandsNeverTrapAndStayWithinLimits() {
        var g = SplitMix(seed: 34)
        let t0: WallTime = 1_800_000_000
        let timerKinds = ["TimerSetCommand", "TimerAddTimeCommand", "TimerDeleteCommand", "TimerDisplayCommand", "TimerResetCommand",
                          "TimerResumeCommand", "TimerStopCommand"]
        let durationKeys = ["DurationInSeconds", "Centuries", "Decades", "Years", "Months", "Weeks", "Days", "Hours", "Minutes", "Seconds"]
        for _ in 0..<3000 {
            var book = TimerBook()
            _ = book.apply(.set(seconds: 600, name: "pasta"), now: t0)
            _ = book.apply(.set(minuteOfDay: 420, days: [], name: ""), now: t0, calendar: FixedOffsetCalendar(), clockSynchronized: true)
            func some(_ keys: [String]) -> JSONValue {
                var object: [String: JSONValue] = [:]
                for key in keys where Bool.random(using: &g) { object[key] = g.number() }
                return .object(object)
            }
            var criterion = some(durationKeys + ["SecondsToAdd", "Position"]).objectValue ?? [:]
            if Bool.random(using: &g) { criterion["Title"] = "pasta" }
            let native: JSONValue = ["Timer": some(durationKeys), "TimerCriteria": [.object(criterion)],
                                     "Alarm": some(["Hour", "Minute"]), "AlarmCriteria": [some(["Hour", "Minute"])]]
            if let action = ClientCommandReader.timerAction(timerKinds.randomElement(using: &g)!, native) {
                _ = book.apply(action, now: t0 + 10)
            }
            for kind in ["AlarmSetCommand", "AlarmUnsetCommand"] {
                if let action = ClientCommandReader.alarmAction(kind, native) {
                    _ = book.apply(action, now: t0 + 10, calendar: FixedOffsetCalendar(offset: 3600), clockSynchronized: true)
                }
            }
            for timer in book.timers {
                #expect((1...TimerBook.longestSeconds).contains(timer.seconds))
                #expect((0...TimerBook.longestSeconds).contains(timer.remainingSeconds(at: t0 + 10)))
            }
            #expect(book.alarms.allSatisfy { (0..<1440).contains($0.minuteOfDay) })
            let volume: JSONValue = ["CommandType": [JSONValue("AdjustVolume"), "SetVolume"].randomElement(using: &g)!,
                                     "VolumeDelta": g.number(), "VolumeValue": g.number(), "VolumeLevel": g.number()]
            switch ClientCommandReader.volumeAction(volume) {
            case .by(let points)?: #expect((-100...100).contains(points))
            case .to(let percent)?: #expect((0...100).contains(percent))
            default: break
            }
        }
    }
}

/// The timers file on a real disk: what is damaged is named, and kept aside before anything replaces it.
@Suite struct StateFileTests {
    func directory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-state-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func write(_ text: String, to path: String) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
    }

    func read(_ path: String) -> String? { FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } }

    /// The clocks the files are read at (only the first test's old-format file depends on them).
    let clocks = ClockReading(wall: 1_800_000_000, boot: 100, bootID: "b")

    func asides(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix("timers.json.bad-") }.sorted()
    }

    @Test func aTimersFileWithAbsurdNumbersIsLoadedNamedAndKeptAside() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/timers.json"
        let text = """
            {"version":1,"timers":[{"id":1,"name":"pasta","seconds":600,"endsAt":1800000300},
            {"id":2,"name":"soup","seconds":9999999999999999,"endsAt":1800000300},
            {"id":3,"name":"tea","seconds":60,"endsAt":1e300},
            {"id":9223372036854775807,"name":"egg","seconds":60,"pausedRemaining":-1}],"alarms":[]}
            """
        write(text, to: path)
        let (book, problems) = try TimerFile(path: path).load(at: clocks)
        #expect(book.timers.map(\.name) == ["pasta"])
        let copies = asides(dir)
        #expect(copies.count == 1)
        #expect(read(dir + "/" + copies[0]) == text)  // the file as it was, byte for byte
        #expect(problems.map(\.message) == [
            "the timers file \(path): timer 2 \"soup\": its length (9999999999999999 s) is not 1 s to 24 hours; left out; the file as it was is kept as \(dir)/\(copies[0])",
            "the timers file \(path): timer 3 \"tea\": its end (1e+300) is not a time; left out; the file as it was is kept as \(dir)/\(copies[0])",
            "the timers file \(path): timer 9223372036854775807 \"egg\": its time left (-1) is not 0 to 24 hours; left out; the file as it was is kept as \(dir)/\(copies[0])",
        ])
        // The file now holds what was read, so the next start finds no damage (and makes no second copy).
        let (again, none) = try TimerFile(path: path).load(at: clocks)
        #expect(again == book && none.isEmpty && asides(dir).count == 1)
    }

    @Test func aTimersFileThatIsNotJSONIsKeptAsideNotOverwritten() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/timers.json"
        write("{\"version\":1,\"timers\":[{\"id\":1", to: path)
        #expect(throws: DeviceProblem.self) { try TimerFile(path: path).load(at: clocks) }
        let copies = asides(dir)
        #expect(copies.count == 1 && read(dir + "/" + copies[0]) == "{\"version\":1,\"timers\":[{\"id\":1")
        #expect(try TimerFile(path: path).load(at: clocks).book == TimerBook())
    }
}

/// Absurd numbers and damaged state through the whole loop: refused in words, kept within limits, never a trap.
@Suite struct AbsurdNumberLoopTests {
    static func addTime(_ seconds: Int, to name: String) -> SpeakerAnswer {
        SpeakerAnswer(transcript: "add \(seconds) seconds to the \(name) timer", text: "", action: .timer(.addTime(seconds: seconds, .named(name))),
                      responses: ActionResponses(succeeded: "I added the time.", failed: "I couldn't add the time."))
    }

    /// "Set a pasta timer for 10 minutes", "add 9999999999999999 seconds to the pasta timer": the speaker died (an
    /// overflow trap when it armed the timer), and again at every start, since the timer was saved first.
    @Test func addingAnAbsurdTimeIsRefusedAndTheTimerStillRingsAfterARestart() async {
        let first = await LoopRig()
        await ask(first, TimerLoopTests.setTimer(600, name: "pasta"))
        await ask(first, Self.addTime(9_999_999_999_999_999, to: "pasta"))
        #expect(first.speech.spoken.last == "Timers can run for up to 24 hours: I can add at most 23 hours and 50 minutes to the pasta timer.")
        #expect(first.loop.currentState == .ready)
        #expect(first.timerStore.book?.timers.first?.remaining(at: first.clock.bootTime) == 600)
        await first.stop()
        let rig = await LoopRig(clock: first.clock.restarted(), timerStore: first.timerStore)
        #expect(await rig.saw(.leds(.timer)))
        await rig.advance(by: .seconds(600))
        #expect(await rig.saw(.leds(.ringing)))
        await rig.stop()
    }

    /// A store handing back numbers no command or file makes (a book made in code): the loop starts, names what its
    /// store left out, drops what is not a number, and arms, ticks and rings around the rest without a trap.
    @Test func absurdSavedTimersNeverTrapTheLoopAndTheStoresProblemsAreTold() async {
        let t0: WallTime = 1_800_000_000
        let saved = TimerBook(timers: [
            SpeakerTimer(id: 1, name: "far", seconds: Int.max, status: .running(endsAt: 1e300)),
            SpeakerTimer(id: 2, name: "paused", seconds: 60, status: .paused(remaining: 1e19)),
            SpeakerTimer(id: 3, name: "nan", seconds: 60, status: .running(endsAt: .nan)),
            SpeakerTimer(id: 4, name: "soon", seconds: 90, status: .running(endsAt: t0 + 90)),
        ], alarms: [SpeakerAlarm(id: Int.max, name: "later", minuteOfDay: 420, days: [], status: .scheduled(at: 1e300))])
        let problem = DeviceProblem("the timers file timers.json: timer 5 \"soup\": its end (inf) is not a time; left out")
        let rig = await LoopRig(clock: ManualClock(wallStart: t0, bootStart: t0), timerStore: FakeTimerStore(saved, problems: [problem]))
        #expect(await rig.saw(.deviceProblem(problem)))
        #expect(await rig.recorder.wait { if case .timer(.missed, let timer, _) = $0 { timer.name == "nan" } else { false } })
        #expect(await rig.recorder.wait { if case .timer(.tick, let timer, let left) = $0 { timer.name == "far" && left == Int.max } else { false } })
        #expect(rig.loop.snapshot.timers.first { $0.name == "paused" }?.remaining(at: t0) == Double(TimerBook.longestSeconds))
        // The LED ring's arc: the running timer nearest its end, then, once it rings, the absurd one, saturated.
        #expect(RingTimers.next(in: rig.loop.snapshot) == RingTimer(length: .seconds(90), left: .seconds(90)))
        await rig.advance(by: .seconds(90))
        #expect(await rig.saw(.leds(.ringing)))
        let far = RingTimers.next(in: rig.loop.snapshot)
        #expect(far?.left == .milliseconds(1_000_000_000_000_000))
        #expect(far?.arc(of: 12, after: .zero) == 12)
        #expect(await rig.send(.press, expecting: .timer))
        // Two days on: the timer alarm, armed a day at most, fired and was armed again; nothing else was due.
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(2 * 86_400))
        #expect(await rig.recorder.wait(after: mark) { if case .timer(.tick, _, _) = $0 { true } else { false } })
        #expect(rig.loop.snapshot.timers.map(\.name) == ["far", "paused"] && rig.loop.currentState == .ready)
        await rig.stop()
    }
}
