import Foundation
import BoardCore
import Synchronization
import Testing
@testable import Board

/// The ring as the running board drives it: frames on a recording bus, from the board's own thread.
@Suite struct RingRunnerTests {
    static let profile = LEDRingProfile(name: "test ring", spiBus: 0, chipSelect: 1, speedHz: 1_000_000, pixelCount: 3,
                                        powerLine: nil, brightness: 10)
    static let dark = APA102.frame([.black, .black, .black], brightness: 10)
    static let listening = APA102.frame([PixelColor](repeating: PixelColor(red: 90, green: 150, blue: 255), count: 3), brightness: 10)
    static let timerGreen = PixelColor(red: 0, green: 200, blue: 60)

    /// A simulated board (its button a pipe nobody writes) with a ring on `bus`.
    static func runner(_ bus: any PixelBus, events: HardwareEvents = HardwareEvents()) throws -> (BoardRunner, [Int32]) {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let runner = try BoardRunner(hardware: .simulated(input: fds[0], terminal: false, draw: { _, _ in }),
                                     gestures: .init(), talkMode: .tap, roles: [.status],
                                     ring: APA102Ring(profile: profile, bus: bus), onHardware: { events.add($0) })
        return (runner, fds)
    }

    /// Waits (polling, up to a minute for a loaded machine) until `done` holds.
    static func eventually(_ done: () -> Bool) async -> Bool {
        for _ in 0..<6000 {
            if done() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return done()
    }

    @Test func theRingStartsDarkShowsTheStateAndIsDarkAfterStop() async throws {
        let bus = RecordingBus()
        let (runner, fds) = try Self.runner(bus)
        defer { close(fds[0]); close(fds[1]) }
        runner.start()
        // Dark first: an APA102 keeps the last frame a crashed run left.
        #expect(await Self.eventually { bus.all.first != nil })
        #expect(bus.all.first == Self.dark)
        runner.show(.listening)
        #expect(await Self.eventually { bus.all.last == Self.listening })
        runner.stop()
        await runner.waitUntilStopped()
        #expect(bus.all.last == Self.dark)
        // Listening is steady: no frames while it lasts beyond the one that shows it.
        #expect(bus.all.filter { $0 == Self.listening }.count == 1)
    }

    @Test func aRunningTimerIsAnArcOfItsTimeLeft() async throws {
        let bus = RecordingBus()
        let (runner, fds) = try Self.runner(bus)
        defer { close(fds[0]); close(fds[1]) }
        // A minute's timer with 30 s left: two of three pixels (rounded up).
        runner.showTimers { RingTimer(length: .seconds(60), left: .seconds(30)) }
        runner.start()
        runner.show(.timer)
        let twoLit = APA102.frame([Self.timerGreen, Self.timerGreen, .black], brightness: 10)
        // The tick dims the arc's last pixel for a moment each second: either frame is the arc.
        let dipped = APA102.frame([Self.timerGreen, .black, .black], brightness: 10)
        #expect(await Self.eventually { bus.all.contains(twoLit) })
        let full = APA102.frame([Self.timerGreen, Self.timerGreen, Self.timerGreen], brightness: 10)
        #expect(!bus.all.contains(full))
        #expect(bus.all.allSatisfy { $0 == Self.dark || $0 == twoLit || $0 == dipped })
        runner.stop()
        await runner.waitUntilStopped()
        #expect(bus.all.last == Self.dark)
    }

    @Test func aFailingRingIsToldOnceAndTriedAgainUntilItWorks() async throws {
        let bus = FlakyBus(failures: 3)
        let events = HardwareEvents()
        let (runner, fds) = try Self.runner(bus, events: events)
        defer { close(fds[0]); close(fds[1]) }
        runner.start()
        runner.show(.listening)
        // Backoff from 1 s: three failures then a frame within about 7 s.
        #expect(await Self.eventually { bus.written.withLock { $0 }.contains(Self.listening) })
        #expect(await Self.eventually { events.all.contains(.ringRecovered) })
        let lost = events.all.filter { if case .ringLost = $0 { true } else { false } }
        #expect(lost.count == 1)
        if case .ringLost(let why)? = lost.first {
            #expect(why.contains("/dev/spidev0.1"))
            #expect(why.contains("bus gone"))
        }
        #expect(events.all.last == .ringRecovered)
        runner.stop()
        await runner.waitUntilStopped()
    }
}

/// Fails its first `failures` writes, then records.
final class FlakyBus: PixelBus {
    let failuresLeft: Mutex<Int>
    let written = Mutex<[[UInt8]]>([])
    init(failures: Int) { failuresLeft = Mutex(failures) }
    func write(_ bytes: [UInt8]) throws(BoardError) {
        let fail = failuresLeft.withLock { left in
            defer { left -= 1 }
            return left > 0
        }
        if fail { throw BoardError("bus gone") }
        written.withLock { $0.append(bytes) }
    }
}

final class HardwareEvents: Sendable {
    private let events = Mutex<[BoardHardwareEvent]>([])
    func add(_ event: BoardHardwareEvent) { events.withLock { $0.append(event) } }
    var all: [BoardHardwareEvent] { events.withLock { $0 } }
}
