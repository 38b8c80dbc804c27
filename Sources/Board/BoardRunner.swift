import FoundationEssentials
public import BoardCore
import Glibc
import Platform
import Synchronization

/// Where the button comes from and where the LEDs go.
public enum BoardHardware: Sendable {
    /// GPIO lines through libgpiod.
    case gpio(GPIODBoard)
    /// The keyboard (or lines of text) as the button, the LEDs drawn as a status line (or logged).
    case simulated(input: Int32, terminal: Bool, draw: @Sendable (LEDState, String) -> Void)
}

/// What happened to the GPIO chip under a running board (logged by the app, once per outage).
public enum BoardHardwareEvent: Sendable, Equatable {
    /// The lines stopped working (the chip went away): why, and that they are looked for again.
    case lost(String)
    /// The lines are requested again and the LEDs show the speaker's state.
    case recovered
    /// The LED ring's SPI writes fail: why, and that it is tried again.
    case ringLost(String)
    /// The LED ring takes its frames again.
    case ringRecovered
}

/// Runs the board on a thread the app owns: waits in poll(2) on the button's descriptor and a wake-up pipe,
/// with a timeout only until the next gesture timer or LED change, so an idle speaker costs no CPU. Events go
/// out through `events`; `show(_:)` may be called from any thread. A GPIO chip that goes away while it runs
/// (its requests' descriptors report an error, or an LED will not take its level) is let go and requested
/// again with backoff (DeviceOutage) until it is back; `onHardware` hears of it once per outage.
public final class BoardRunner: Sendable {
    public let events: AsyncStream<BoardEvent>
    private let continuation: AsyncStream<BoardEvent>.Continuation
    private let hardware: BoardHardware
    private let roles: [LEDRole]
    /// What `show` and `stop` ask of the board's thread; `closed` once that thread has closed the wake-up pipe (a
    /// `stop` after it must not write to a descriptor number that may have been reused since).
    private let requests = Mutex<(state: LEDState?, stop: Bool, closed: Bool)>((nil, false, false))
    /// The thread has ended (LEDs off, lines released), and who waits for that (`waitUntilStopped`).
    private let ended = Mutex<(done: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let core: Mutex<BoardLogic>
    private let onHardware: @Sendable (BoardHardwareEvent) -> Void
    private let outageBackoff: DeviceOutage
    /// The APA102 ring, driven from the board's thread like the LED lines.
    private let ring: APA102Ring?
    /// Where the ring's arc learns the next timer (the speaker's snapshot, once the loop exists).
    private let timerSource = Mutex<(@Sendable () -> RingTimer?)?>(nil)
    /// The owner's setting for the ring (on, how bright), and whether the board's thread has drawn it yet.
    private let ringRequest: Mutex<(setting: RingSetting, changed: Bool)>

    public init(hardware: BoardHardware, gestures: ButtonGestures.Settings, talkMode: TalkMode, roles: [LEDRole],
                ring: APA102Ring? = nil, outageBackoff: DeviceOutage = DeviceOutage(),
                onHardware: @escaping @Sendable (BoardHardwareEvent) -> Void = { _ in }) throws(BoardError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BoardError("cannot create the board's wake-up pipe: \(String(cString: strerror(errno)))") }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        // Both ends non-blocking: a full pipe already holds a wake-up, and `wake` writes with the request lock held.
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        // The app's own spawns close every inherited descriptor (CPosix/hs_spawn.c), but a library that forks
        // (espeak-ng's audio output, libasound's plugins) does not: neither end goes to a child.
        for fd in fds { _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC) }
        self.hardware = hardware
        self.roles = roles
        self.onHardware = onHardware
        self.outageBackoff = outageBackoff
        self.ring = ring
        ringRequest = Mutex((RingSetting(brightness: ring?.profile.brightness ?? APA102.brightnessRange.upperBound), false))
        core = Mutex(BoardLogic(gestures: gestures, talkMode: talkMode, roles: roles, now: .now))
        (events, continuation) = AsyncStream.makeStream(of: BoardEvent.self, bufferingPolicy: .bufferingNewest(64))
    }

    public func start() {
        OwnedThread.start(name: "hs-board") { [self] in self.run() }
    }

    public func show(_ state: LEDState) {
        requests.withLock { r in
            r.state = state
            wake(r.closed)
        }
    }

    /// The ring's setting as it starts (from its profile's brightness); nil without a ring.
    public var ringSetting: RingSetting? { ring == nil ? nil : ringRequest.withLock { $0.setting } }

    /// Shows the ring at `setting` from its next frame (dark while off). Nothing without a ring.
    public func setRing(_ setting: RingSetting) {
        guard ring != nil else { return }
        ringRequest.withLock { $0 = (setting, true) }
        requests.withLock { r in wake(r.closed) }
    }

    /// The ring's timer arc asks `source` for the timer nearest its end whenever a timer state begins.
    public func showTimers(from source: @escaping @Sendable () -> RingTimer?) {
        timerSource.withLock { $0 = source }
    }

    /// LEDs off and lines released; the events stream ends once that is done. Any number of times, from any thread.
    public func stop() {
        requests.withLock { r in
            r.stop = true
            wake(r.closed)
        }
    }

    /// Suspends until the board's thread has ended after `stop` (LEDs off, lines released); at once if it has.
    /// Only after `start`.
    public func waitUntilStopped() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let done = ended.withLock { e in
                if !e.done { e.waiting.append(waiter) }
                return e.done
            }
            if done { waiter.resume() }
        }
    }

    /// Called with the request lock held, so that the pipe is not closed under it.
    private func wake(_ closed: Bool) {
        guard !closed else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func run() {
        let terminal: Bool
        var inputFD: Int32?
        switch hardware {
        case .gpio(let board): inputFD = board.buttonFileDescriptor; terminal = false
        case .simulated(let fd, let isTerminal, _): inputFD = fd; terminal = isTerminal
        }
        var parser = SimulatedButtonParser(terminal: terminal)
        // A terminal delivers keys only after Enter unless canonical mode is off; restore it on the way out.
        var savedTerminal = termios()
        let rawTerminal = terminal && inputFD.map { tcgetattr($0, &savedTerminal) == 0 } == true
        if rawTerminal, let fd = inputFD {
            var raw = savedTerminal
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
            tcsetattr(fd, TCSANOW, &raw)
        }
        var pendingRelease: ContinuousClock.Instant? = nil
        var lastDrawn = ""
        var buffer = [UInt8](repeating: 0, count: 256)

        func emit(_ events: [BoardEvent]) { for e in events { continuation.yield(e) } }
        // The GPIO chip gone (nil while it works): when to look for it again.
        var outage = outageBackoff
        var lookAgain: ContinuousClock.Instant? = nil
        func lose(_ board: GPIODBoard, _ why: String) {
            board.close()
            let (begins, wait) = outage.failed()
            lookAgain = .now + wait
            if begins {
                onHardware(.lost("GPIO chip \(board.chips.map { "\"\($0)\"" }.joined(separator: ", ")): \(why); "
                    + "the button and the LEDs are let go and requested again, every \(outage.first) at first, "
                    + "then up to every \(outage.maximum), until it is back"))
            }
        }
        func applyLEDs(force: Bool = false) {
            let now = ContinuousClock.now
            let (changes, state, levels) = core.withLock { c in (c.ledChanges(at: now), c.ledState, c.ledLevels(at: now)) }
            switch hardware {
            case .gpio(let board):
                guard lookAgain == nil else { return }  // levels are set in full once the chip is back
                guard !changes.isEmpty || force else { return }
                if !board.setLEDs(force ? levels.merging(changes) { _, new in new } : changes) {
                    lose(board, "an LED line would not take its level (\(String(cString: strerror(errno))))")
                }
            case .simulated(_, _, let draw):
                // The line names the state as well: a new state whose LEDs look the same (ready after off: all
                // dark) is still drawn, so the line is compared, not the LED levels.
                let line = SimulatedLEDs.render(state: state, levels: levels, roles: roles)
                if line != lastDrawn { lastDrawn = line; draw(state, line) }
            }
        }

        var muteFD: Int32? = nil
        var switchPosition: Bool? = nil
        func readSwitch(_ board: GPIODBoard) {
            guard let on = board.readMuteSwitch(), on != switchPosition else { return }
            switchPosition = on
            emit([.intent(.muteSwitch(on: on))])
        }
        if case .gpio(let board) = hardware, let fd = board.muteSwitchFileDescriptor {
            muteFD = fd
            readSwitch(board)  // where it is at start decides, before anything is heard
        }

        // The ring: what it shows since when, and when its next frame is due. It starts dark: an APA102 keeps its
        // last frame while powered, even one a crashed run left.
        var ringLook = ring.map { RingAnimation(state: .off, pixelCount: $0.profile.pixelCount) }
        var ringSince = ContinuousClock.now
        var ringDue: ContinuousClock.Instant? = ring == nil ? nil : .now
        var ringOutage = DeviceOutage(first: .seconds(1), maximum: .seconds(30))
        var ringSetting = ringRequest.withLock { $0.setting }
        func drawRing() {
            if let changed = ringRequest.withLock({ r -> RingSetting? in defer { r.changed = false }; return r.changed ? r.setting : nil }) {
                ringSetting = changed
                if !ringOutage.isDown { ringDue = .now }
            }
            guard let ring, let look = ringLook, let due = ringDue, ContinuousClock.now >= due else { return }
            let now = ContinuousClock.now
            do throws(BoardError) {
                if ringSetting.on {
                    ringDue = try ring.show(look, at: now - ringSince, brightness: ringSetting.brightness).map { ringSince + $0 }
                } else {
                    try ring.clear()  // dark until it is on again: nothing more to draw
                    ringDue = nil
                }
                if ringOutage.recovered() { onHardware(.ringRecovered) }
            } catch {
                let (begins, wait) = ringOutage.failed()
                ringDue = now + wait
                if begins {
                    // spidev's own errors start with its path; a bus's may not.
                    let path = ring.profile.devicePath
                    let why = error.message.hasPrefix(path) ? error.message : "\(path): \(error.message)"
                    onHardware(.ringLost("\(why); tried again every \(ringOutage.first) at first, then up to every \(ringOutage.maximum)"))
                }
            }
        }
        func showOnRing(_ state: LEDState) {
            guard let ring else { return }
            let timer = state == .timer || state == .timerEnding ? timerSource.withLock { $0 }?() : nil
            let look = RingAnimation(state: state, pixelCount: ring.profile.pixelCount, timer: timer)
            guard look != ringLook else { return }
            ringLook = look
            ringSince = .now
            // In an outage the next try stays where the backoff put it.
            if !ringOutage.isDown { ringDue = ringSince }
        }

        var firstDraw = true
        var lastTick = ContinuousClock.now
        while true {
            let request = requests.withLock { r -> (LEDState?, Bool) in defer { r.state = nil }; return (r.state, r.stop) }
            if request.1 { break }
            if let state = request.0 {
                core.withLock { $0.show(state, at: .now) }
                showOnRing(state)
            }

            if let due = lookAgain, ContinuousClock.now >= due, case .gpio(let board) = hardware {
                do throws(BoardError) {
                    try board.reopen()
                    lookAgain = nil
                    inputFD = board.buttonFileDescriptor
                    muteFD = board.muteSwitchFileDescriptor
                    if outage.recovered() { onHardware(.recovered) }
                    firstDraw = true  // every LED's level anew, on lines that start dark
                    if muteFD != nil { readSwitch(board) }  // said only if it moved while the chip was gone
                } catch {
                    lose(board, "still missing (\(error.message))")
                }
            }

            let now = ContinuousClock.now
            lastTick = now
            if let due = pendingRelease, now >= due {
                pendingRelease = nil
                emit(core.withLock { $0.edge(pressed: false, at: now) })
            }
            emit(core.withLock { $0.tick(at: now) })
            applyLEDs(force: firstDraw)
            firstDraw = false
            drawRing()

            var deadline = core.withLock { $0.nextDeadline(after: .now) }
            if let due = pendingRelease { deadline = min(deadline ?? due, due) }
            if let due = lookAgain { deadline = min(deadline ?? due, due) }
            if let due = ringDue { deadline = min(deadline ?? due, due) }
            var timeoutMS: Int32 = -1
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                timeoutMS = max(0, Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            }
            // While the chip is gone its old descriptors are not watched (they would report the error forever).
            let watching = lookAgain == nil
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            if watching, let fd = muteFD { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            if watching, let fd = inputFD { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), timeoutMS)
            if ready < 0 && errno != EINTR { break }
            if fds[0].revents & Int16(POLLIN) != 0 { while read(wakeRead, &buffer, buffer.count) > 0 {} }
            if case .gpio(let board) = hardware, fds.dropFirst().contains(where: { $0.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 }) {
                // The kernel ends a line request whose chip is removed: poll says so with POLLERR/POLLHUP.
                lose(board, "its lines' requests report an error (the chip was removed)")
                continue
            }
            if muteFD != nil, watching, fds[1].revents & Int16(POLLIN) != 0, case .gpio(let board) = hardware { readSwitch(board) }
            guard inputFD != nil, watching, let last = fds.last, last.revents & Int16(POLLIN | POLLHUP) != 0 else { continue }
            switch hardware {
            case .gpio(let board):
                // Each edge at the kernel's time of it, never before what the board has already been told.
                let (now, monotonicNow) = (ContinuousClock.now, GPIOEdge.monotonicNow())
                for edge in board.readButtonEdges() {
                    let at = max(edge.instant(now: now, monotonicNow: monotonicNow), lastTick)
                    emit(core.withLock { $0.edge(pressed: edge.pressed, at: at) })
                }
            case .simulated(let fd, _, _):
                let n = read(fd, &buffer, buffer.count)
                if n == 0 {  // end of input: the LEDs go on without a button
                    inputFD = nil
                    emit([.inputEnded])
                }
                if n <= 0 { continue }
                let (actions, _) = parser.feed(Array(buffer[0..<n]))
                for action in actions {
                    let at = ContinuousClock.now
                    switch action {
                    case .press: emit(core.withLock { $0.edge(pressed: true, at: at) })
                    case .release: emit(core.withLock { $0.edge(pressed: false, at: at) })
                    case .pressFor(let length):
                        emit(core.withLock { $0.edge(pressed: true, at: at) })
                        pendingRelease = at + length
                    case .muteSwitch(let on): emit([.intent(.muteSwitch(on: on))])
                    }
                }
            }
        }
        if rawTerminal, case .simulated(let fd, _, _) = hardware { tcsetattr(fd, TCSANOW, &savedTerminal) }
        // Shutdown: nothing may stay lit (a stuck "listening" LED is the peers' classic bug). The ring goes dark before
        // its power line is let go.
        try? ring?.clear()
        switch hardware {
        case .gpio(let board): board.close()
        case .simulated(_, _, let draw): draw(.off, SimulatedLEDs.render(state: .off, levels: [:], roles: roles))
        }
        requests.withLock { r in
            r.closed = true
            close(wakeRead)
            close(wakeWrite)
        }
        continuation.finish()
        for waiter in ended.withLock({ e in e.done = true; defer { e.waiting = [] }; return e.waiting }) { waiter.resume() }
    }
}
