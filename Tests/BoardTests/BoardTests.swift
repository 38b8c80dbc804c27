import Foundation
import BoardCore
import Synchronization
import Testing
import TestSupport
@testable import Board

/// A manual clock: instants are a fixed origin plus what the test says.
struct ManualTime {
    let origin = ContinuousClock.now
    func at(_ ms: Int) -> ContinuousClock.Instant { origin + .milliseconds(ms) }
}

@Suite struct ButtonGestureTests {
    let t = ManualTime()

    @Test func bouncesWithinTheDebounceTimeAreIgnored() {
        var g = ButtonGestures()
        #expect(g.edge(pressed: true, at: t.at(0)) == [.pressed])
        #expect(g.edge(pressed: false, at: t.at(3)).isEmpty)
        #expect(g.edge(pressed: true, at: t.at(7)).isEmpty)
        #expect(g.tick(at: t.at(30)).isEmpty)  // still pressed when the lockout ends: nothing new
        #expect(g.edge(pressed: false, at: t.at(200)) == [.released(held: .milliseconds(200))])
    }

    @Test func aReleaseThatBouncedIsNotLost() {
        var g = ButtonGestures()
        _ = g.edge(pressed: true, at: t.at(0))
        // Released during the lockout and stays released: taken when the lockout ends.
        #expect(g.edge(pressed: false, at: t.at(20)).isEmpty)
        #expect(g.nextDeadline == t.at(30))
        #expect(g.tick(at: t.at(30)) == [.released(held: .milliseconds(30))])
        #expect(!g.isPressed)
    }

    @Test func longPressFiresOnceWhileHeld() {
        var g = ButtonGestures(settings: .init(longPress: .milliseconds(1000)))
        _ = g.edge(pressed: true, at: t.at(0))
        _ = g.tick(at: t.at(30))
        #expect(g.nextDeadline == t.at(1000))
        #expect(g.tick(at: t.at(999)).isEmpty)
        #expect(g.tick(at: t.at(1000)) == [.longPress])
        #expect(g.tick(at: t.at(4000)).isEmpty)
        #expect(g.edge(pressed: false, at: t.at(4000)) == [.released(held: .seconds(4))])
    }

    /// Held on past the long press to the set-up hold: one `setupHold`, after the long press; a release
    /// before it, or a new press, has none.
    @Test func theSetupHoldFiresOnceAfterTheLongPress() {
        var g = ButtonGestures(settings: .init(longPress: .milliseconds(1000), setupHold: .milliseconds(5000)))
        _ = g.edge(pressed: true, at: t.at(0))
        _ = g.tick(at: t.at(30))
        #expect(g.tick(at: t.at(1000)) == [.longPress])
        #expect(g.nextDeadline == t.at(5000))
        #expect(g.tick(at: t.at(4999)).isEmpty)
        #expect(g.tick(at: t.at(5000)) == [.setupHold])
        #expect(g.nextDeadline == nil)
        #expect(g.tick(at: t.at(9000)).isEmpty)
        #expect(g.edge(pressed: false, at: t.at(9000)) == [.released(held: .seconds(9))])
        _ = g.tick(at: t.at(9030))
        // a press released at 4 s: the long press only
        _ = g.edge(pressed: true, at: t.at(10_000))
        _ = g.tick(at: t.at(10_030))
        #expect(g.tick(at: t.at(11_000)) == [.longPress])
        #expect(g.edge(pressed: false, at: t.at(14_000)) == [.released(held: .seconds(4))])
        #expect(g.nextDeadline == t.at(14_030))
        #expect(g.tick(at: t.at(15_000)).isEmpty)
        #expect(g.tick(at: t.at(20_000)).isEmpty)
    }

    @Test func doublePressWithinTheGap() {
        var g = ButtonGestures(settings: .init(doublePressGap: .milliseconds(400)))
        _ = g.edge(pressed: true, at: t.at(0))
        _ = g.edge(pressed: false, at: t.at(100))
        #expect(g.edge(pressed: true, at: t.at(450)) == [.pressed, .doublePress])
        _ = g.edge(pressed: false, at: t.at(550))
        // A third quick press is not another double press; a press after the gap is a plain press.
        #expect(g.edge(pressed: true, at: t.at(700)) == [.pressed])
        _ = g.edge(pressed: false, at: t.at(800))
        #expect(g.edge(pressed: true, at: t.at(1300)) == [.pressed])
    }

    @Test func aLongPressIsNotTheFirstHalfOfADoublePress() {
        var g = ButtonGestures()
        _ = g.edge(pressed: true, at: t.at(0))
        _ = g.tick(at: t.at(1000))
        _ = g.edge(pressed: false, at: t.at(1100))
        #expect(g.edge(pressed: true, at: t.at(1200)) == [.pressed])
    }
}

@Suite struct TalkModeTests {
    let t = ManualTime()

    func run(_ mode: TalkMode, _ edges: [(Bool, Int)], tickAt: [Int] = []) -> [TalkIntent] {
        var core = BoardLogic(gestures: .init(), talkMode: mode, roles: [.status], now: t.at(0))
        var events: [BoardEvent] = []
        var ticks = tickAt
        for (pressed, ms) in edges {
            while let first = ticks.first, first <= ms { events += core.tick(at: t.at(first)); ticks.removeFirst() }
            events += core.edge(pressed: pressed, at: t.at(ms))
        }
        for ms in ticks { events += core.tick(at: t.at(ms)) }
        return events.compactMap { if case .intent(let i) = $0 { return i }; return nil }
    }

    @Test func tapToTalk() {
        // Tap starts, a second tap (well after the double-press gap) stops: each is a press and its end.
        #expect(run(.tap, [(true, 0), (false, 100), (true, 3000), (false, 3100)]) == [.press, .tapEnded, .press, .tapEnded])
        // A long press cancels, and its release adds nothing.
        #expect(run(.tap, [(true, 0), (false, 1500)], tickAt: [1000]) == [.press, .cancel])
    }

    /// The set-up hold teaches the voice in tap mode (after the long press's cancel, the release adding
    /// nothing); in hold mode a long hold stays a long question.
    @Test func theSetupHoldTeachesTheVoiceInTapModeOnly() {
        #expect(run(.tap, [(true, 0), (false, 6000)], tickAt: [1000, 5000]) == [.press, .cancel, .teachVoice])
        #expect(run(.hold, [(true, 0), (false, 6000)], tickAt: [1000, 5000]) == [.talk, .endTalk])
    }

    @Test func holdToTalk() {
        // Listening while held: the release ends the query, however long the question was.
        #expect(run(.hold, [(true, 0), (false, 2500)], tickAt: [1000]) == [.talk, .endTalk])
        #expect(run(.hold, [(true, 0), (false, 300)]) == [.talk, .endTalk])
    }

    @Test func doublePressIsReported() {
        #expect(run(.tap, [(true, 0), (false, 100), (true, 300), (false, 400)]) == [.press, .tapEnded, .press, .doublePress, .tapEnded])
    }
}

@Suite struct LEDTests {
    let t = ManualTime()

    /// Every state, ready and off included (they once looked the same: all dark), can be told apart.
    @Test func everyPairOfSingleLEDPatternsCanBeToldApart() {
        let states = LEDState.allCases
        for (i, a) in states.enumerated() {
            for b in states[(i + 1)...] {
                let pa = LEDScheme.singleLED(a), pb = LEDScheme.singleLED(b)
                // Apart by rhythm (flashes per period), by a clearly different duty cycle, steady vs blinking, or a
                // flicker against a slow blink (periods five times apart or more).
                let (slow, fast) = (max(pa.period, pb.period), min(pa.period, pb.period))
                let apart = pa.flashesPerPeriod != pb.flashesPerPeriod || abs(pa.dutyCycle - pb.dutyCycle) >= 0.25
                    || (pa.steps.isEmpty != pb.steps.isEmpty) || (fast > .zero && slow >= fast * 5)
                #expect(apart, "\(a) and \(b) look alike")
            }
        }
        #expect(LEDScheme.singleLED(.off) == .off)
    }

    @Test func threeLEDBoardShowsReadyAsAHeartbeatOnTheListeningLED() {
        let ready = LEDScheme.threeLEDs(.ready)
        #expect(ready[.listening] == LEDScheme.singleLED(.ready) && ready[.searching] == .off && ready[.speaking] == .off)
        #expect(LEDScheme.threeLEDs(.off).values.allSatisfy { $0 == .off })
        #expect(LEDScheme.threeLEDs(.ready) != LEDScheme.threeLEDs(.off))
    }

    @Test func singleLEDErrorSequenceOnTheClock() {
        var animator = LEDAnimator(roles: [.status], now: t.at(0))
        animator.set(state: .error, at: t.at(0))
        var seen: [(Int, Bool)] = []
        var now = t.at(0)
        // Follow the animator's own next-change times over one period: three flashes, then the pause.
        for _ in 0..<7 {
            let (levels, next) = animator.levels(at: now)
            seen.append((Int((now - t.at(0)) / .milliseconds(1)), levels[.status]!))
            now = next!
        }
        #expect(seen.map(\.0) == [0, 120, 240, 360, 480, 600, 1600])
        #expect(seen.map(\.1) == [true, false, true, false, true, false, true])
    }

    @Test func threeLEDBoardGivesEachStateItsLED() {
        var animator = LEDAnimator(roles: [.listening, .searching, .speaking], now: t.at(0))
        animator.set(state: .listening, at: t.at(0))
        #expect(animator.levels(at: t.at(10)).levels == [.listening: true, .searching: false, .speaking: false])
        #expect(animator.levels(at: t.at(10)).nextChange == nil)  // steady: no wake-ups needed
        animator.set(state: .searching, at: t.at(100))
        #expect(animator.levels(at: t.at(150)).levels == [.listening: false, .searching: true, .speaking: false])
        #expect(animator.levels(at: t.at(250)).levels[.searching] == false)
        animator.set(state: .speaking, at: t.at(1000))
        #expect(animator.levels(at: t.at(1000)).levels == [.listening: false, .searching: false, .speaking: true])
        animator.set(state: .ready, at: t.at(2000))
        // Ready: the listening LED blips for 50 ms every 5 s, the others are dark.
        #expect(animator.levels(at: t.at(2000)).levels == [.listening: true, .searching: false, .speaking: false])
        #expect(animator.levels(at: t.at(2100)).levels.values.allSatisfy { !$0 })
        #expect(animator.levels(at: t.at(2100)).nextChange == t.at(7000))
        animator.set(state: .off, at: t.at(8000))
        #expect(animator.levels(at: t.at(8000)).levels.values.allSatisfy { !$0 })
        #expect(animator.levels(at: t.at(8000)).nextChange == nil)
    }

    /// Setup mode on a three-LED board: one light going round, each LED lit in its own third of the period.
    @Test func threeLEDBoardShowsSetupAsALightGoingRound() {
        var animator = LEDAnimator(roles: [.listening, .searching, .speaking], now: t.at(0))
        animator.set(state: .setup, at: t.at(0))
        let lit = { (ms: Int) in animator.levels(at: t.at(ms)).levels.filter(\.value).map(\.key) }
        #expect(lit(100) == [.listening])
        #expect(lit(400) == [.searching])
        #expect(lit(700) == [.speaking])
        #expect(lit(1000) == [.listening])
        #expect(animator.levels(at: t.at(100)).nextChange == t.at(300))
    }

    @Test func coreReportsOnlyChangedLEDs() {
        var core = BoardLogic(gestures: .init(), talkMode: .tap, roles: [.status], now: t.at(0))
        core.show(.searching, at: t.at(0))
        #expect(core.ledChanges(at: t.at(0)) == [.status: true])
        #expect(core.ledChanges(at: t.at(50)).isEmpty)
        #expect(core.ledChanges(at: t.at(100)) == [.status: false])
        #expect(core.nextDeadline(after: t.at(100)) == t.at(200))
    }
}

@Suite(.ownThread) struct SimulatedBoardTests {
    @Test func linesAreButtonCommands() {
        var parser = SimulatedButtonParser(terminal: false)
        let (actions, unknown) = parser.feed(Array("press\nrel".utf8))
        #expect(actions == [.press] && unknown.isEmpty)
        let more = parser.feed(Array("ease\nclick\nlong\nbogus\n".utf8))
        #expect(more.actions == [.release, .pressFor(.milliseconds(120)), .pressFor(.milliseconds(1500))])
        #expect(more.unknown == ["bogus"])
    }

    @Test func keysOnATerminal() {
        var parser = SimulatedButtonParser(terminal: true)
        #expect(parser.feed([UInt8(ascii: " "), UInt8(ascii: "h"), UInt8(ascii: "x"), UInt8(ascii: "h")]).actions
            == [.pressFor(.milliseconds(120)), .press, .release])
    }

    @Test func theMuteSwitchIsSimulatedToo() async throws {
        var lines = SimulatedButtonParser(terminal: false)
        #expect(lines.feed(Array("mute on\nmute off\nMUTE\nunmute\n".utf8)).actions
                == [.muteSwitch(true), .muteSwitch(false), .muteSwitch(true), .muteSwitch(false)])
        var keys = SimulatedButtonParser(terminal: true)
        #expect(keys.feed([UInt8(ascii: "m"), UInt8(ascii: "m")]).actions == [.muteSwitch(true), .muteSwitch(false)])
        // Through the runner: the switch is an intent of its own, with no button gesture.
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let runner = try BoardRunner(hardware: .simulated(input: fds[0], terminal: false, draw: { _, _ in }),
                                     gestures: .init(), talkMode: .tap, roles: [.status])
        runner.start()
        var events = runner.events.makeAsyncIterator()
        _ = "mute on\n".withCString { write(fds[1], $0, 8) }
        #expect(await events.next() == .intent(.muteSwitch(on: true)))
        runner.stop()
        close(fds[1])
        close(fds[0])
    }

    @Test func aMuteSwitchLineIsCheckedLikeTheOthers() {
        let error = #expect(throws: BoardError.self) {
            try GPIODBoard(button: nil, leds: [:], muteSwitch: GPIOLineSpec(chip: "/dev/gpiochip7", line: "GPIO27", activeLow: true))
        }
        #expect(error?.message.contains("\"/dev/gpiochip7\" (for line GPIO27 on /dev/gpiochip7)") == true)
    }

    @Test func runnerTurnsInputIntoEventsAndSwitchesLEDsOffAtStop() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let drawn = DrawLog()
        let runner = try BoardRunner(hardware: .simulated(input: fds[0], terminal: false, draw: { drawn.add($1) }),
                                     // A long press needs a day here, so a loaded machine cannot turn this press into one
                                     // (a minute once did: the whole suite ran 100 s on two busy cores in CI).
                                     gestures: .init(longPress: .seconds(86_400)), talkMode: .hold, roles: [.status])
        runner.start()
        var events = runner.events.makeAsyncIterator()
        _ = "press\n".withCString { write(fds[1], $0, 6) }
        #expect(await events.next() == .button(.pressed))
        #expect(await events.next() == .intent(.talk))
        runner.show(.listening)
        _ = "release\n".withCString { write(fds[1], $0, 8) }
        let afterRelease = await events.next()
        guard case .button(.released)? = afterRelease else { Issue.record("no release but \(String(describing: afterRelease))"); return }
        #expect(await events.next() == .intent(.endTalk))
        runner.stop()
        while await events.next() != nil {}  // the stream ends once the board has shut down
        #expect(drawn.lines.contains("[listening ●]"))
        #expect(drawn.lines.last == "[off ○]")
        close(fds[0]); close(fds[1])
    }
}

extension SimulatedBoardTests {
    /// A simulated board in tap mode with one status LED, reading `input` and drawing into `drawn`.
    func tapRunner(input: Int32, drawn: DrawLog) throws -> BoardRunner {
        try BoardRunner(hardware: .simulated(input: input, terminal: false, draw: { drawn.add($1) }),
                        gestures: .init(), talkMode: .tap, roles: [.status])
    }

    /// The board thread may draw its first line before the first show() arrives; a state whose LEDs look like the
    /// off line's (ready: all dark) must still be drawn. (It was not: `board` printed "[off" and never "[ready"
    /// about one start in thirty.)
    @Test func aStateWithTheSameLEDsIsStillDrawn() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let drawn = DrawLog()
        let runner = try tapRunner(input: fds[0], drawn: drawn)
        runner.start()
        // The losing order of the race, made certain: the first line is out before show().
        for _ in 0..<400 where drawn.lines.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        #expect(drawn.lines == ["[off ○]"])
        runner.show(.ready)
        for _ in 0..<400 where !drawn.lines.contains(where: { $0.hasPrefix("[ready") }) { try await Task.sleep(for: .milliseconds(5)) }
        #expect(drawn.lines.contains { $0.hasPrefix("[ready") }, "\(drawn.lines)")
        runner.stop()
        var events = runner.events.makeAsyncIterator()
        while await events.next() != nil {}
    }
}

extension SimulatedBoardTests {
    /// `waitUntilStopped` returns once the board's thread has turned the LEDs off (run's board service waits so, last
    /// of the services). A stop after the end (the loop's shutdown and the board service both stop it) writes nothing
    /// into a pipe that has since taken the closed wake-up pipe's descriptor numbers.
    @Test func waitUntilStoppedReturnsOnceTheLEDsAreOffAndALaterStopWritesNothing() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let drawn = DrawLog()
        let runner = try tapRunner(input: fds[0], drawn: drawn)
        runner.start()
        runner.show(.listening)
        runner.stop()
        await runner.waitUntilStopped()
        #expect(drawn.lines.last == "[off ○]")
        await runner.waitUntilStopped()  // ended already: at once
        var reused: [Int32] = [0, 0]
        #expect(pipe(&reused) == 0)
        defer { close(reused[0]); close(reused[1]) }
        _ = fcntl(reused[0], F_SETFL, O_NONBLOCK)
        runner.stop()
        runner.show(.ready)
        var byte: UInt8 = 0
        #expect(read(reused[0], &byte, 1) == -1)
    }
}

final class DrawLog: Sendable {
    private let stored = Mutex<[String]>([])
    func add(_ line: String) { stored.withLock { $0.append(line) } }
    var lines: [String] { stored.withLock { $0 } }
}

@Suite struct GPIODriverTests {
    @Test func missingChipIsNamedWithHowToCheck() throws {
        guard !FileManager.default.fileExists(atPath: "/dev/gpiochip0") else {
            // On a machine with a real chip, ask for one that cannot exist instead.
            let error = #expect(throws: BoardError.self) {
                try GPIODBoard(button: GPIOLineSpec(chip: "gpiochip99", line: "GPIO17", activeLow: true), leds: [:])
            }
            #expect(error?.message.contains("\"gpiochip99\"") == true)
            return
        }
        let error = #expect(throws: BoardError.self) {
            try GPIODBoard(button: GPIOLineSpec(chip: "gpiochip0", line: "GPIO17", activeLow: true), leds: [:])
        }
        let message = error?.message ?? ""
        #expect(message.contains("GPIO chip \"gpiochip0\" (for line GPIO17 on gpiochip0) cannot be opened"))
        #expect(message.contains("gpiodetect") && message.contains("gpioinfo"))
        #expect(message.contains("no /dev/gpiochip*"))
    }

    @Test func ledLinesAreCheckedToo() {
        let error = #expect(throws: BoardError.self) {
            try GPIODBoard(button: nil, leds: [.listening: GPIOLineSpec(chip: "/dev/gpiochip7", line: "22", activeLow: false)])
        }
        #expect(error?.message.contains("\"/dev/gpiochip7\" (for line 22 on /dev/gpiochip7)") == true)
    }
}

/// What both libgpiod backends share, and which one this build chose.
@Suite(.ownThread) struct GPIOBackendTests {
    /// Package.swift picks the backend from pkg-config's libgpiod version: a build on Debian 13 (libgpiod 2) that
    /// compiled the 1.6 backend, or the reverse, would not link or would call the wrong API.
    @Test func theBackendIsTheInstalledLibgpiodsGeneration() throws {
        let pkgConfig = Process()
        pkgConfig.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        pkgConfig.arguments = ["pkg-config", "--modversion", "libgpiod"]
        let output = Pipe()
        pkgConfig.standardOutput = output
        try pkgConfig.run()
        let version = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        pkgConfig.waitUntilExit()
        let major = try #require(Int(version.split(separator: ".").first ?? ""))
        if let forced = ProcessInfo.processInfo.environment["HOUND_SPEAKER_LIBGPIOD"].flatMap({ Int($0) }) {
            #expect(GPIODBoard.libraryGeneration == forced)
        } else {
            #expect(GPIODBoard.libraryGeneration == (major >= 2 ? 2 : 1))
        }
        // The library the binary runs with says the same generation.
        #expect(GPIODBoard.libraryVersion.hasPrefix("\(GPIODBoard.libraryGeneration)."), "\(GPIODBoard.libraryVersion)")
    }

    @Test func chipNamesResolveAsLibgpiodsLookupDid() {
        #expect(GPIOChipName("gpiochip4") == .path("/dev/gpiochip4"))
        #expect(GPIOChipName("4") == .path("/dev/gpiochip4"))
        #expect(GPIOChipName("/dev/gpiochip0") == .path("/dev/gpiochip0"))
        #expect(GPIOChipName("pinctrl-rp1") == .label("pinctrl-rp1"))
        #expect(GPIOChipName("pinctrl-bcm2835") == .label("pinctrl-bcm2835"))
    }

    @Test func chipDevicesAreListedInNumberOrder() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gpio-dev-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["gpiochip10", "gpiochip2", "gpiochip0", "gpiochipX", "gpiomem", "ttyS0"] {
            #expect(FileManager.default.createFile(atPath: "\(dir)/\(name)", contents: nil))
        }
        #expect(GPIOChipName.devices(in: dir) == ["gpiochip0", "gpiochip2", "gpiochip10"])
    }

    /// A chip named by its label that no chip here carries: named like a missing path, with the chips there are.
    @Test func aLabelNoChipCarriesIsNamed() {
        let error = #expect(throws: BoardError.self) {
            try GPIODBoard(button: GPIOLineSpec(chip: "no-such-pinctrl", line: "GPIO17", activeLow: true), leds: [:])
        }
        let message = error?.message ?? ""
        #expect(message.contains("GPIO chip \"no-such-pinctrl\" (for line GPIO17 on no-such-pinctrl) cannot be opened"), "\(message)")
        #expect(message.contains(String(cString: strerror(ENOENT))))
        #expect(error?.isConfiguration == true)
    }

    @Test func edgesAreTimedByTheKernelsClock() {
        let now = ContinuousClock.now
        let edge = GPIOEdge(pressed: true, monotonicNanoseconds: 10_000_000_000)
        // 40 ms before the board read it.
        #expect(edge.instant(now: now, monotonicNow: 10_040_000_000) == now - .milliseconds(40))
        // A stamp from the future, or one too old to be on this clock: now.
        #expect(edge.instant(now: now, monotonicNow: 9_000_000_000) == now)
        #expect(edge.instant(now: now, monotonicNow: 10_000_000_000 + 5_000_000_000) == now)
        // Absurd values do not trap.
        #expect(GPIOEdge(pressed: false, monotonicNanoseconds: 0).instant(now: now, monotonicNow: .max) == now)
    }
}
