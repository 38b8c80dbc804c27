public import Timers

/// The speaker's decisions, with no I/O (issue #38, "The loop carries out effects; the core decides"): the state
/// machine, the timers and alarms, the screen's dimming, whether the always-on microphone delivers audio, and the
/// outcome of the last client action, in one value. `step` takes an input and the time it is handled at and returns
/// what to do; `SpeakerLoop` only carries that out through the ports and reports back what the ports said
/// (`.timersSaved`, `.screenLightFailed`, `.volumeChanged`, `.microphone`).
///
/// Each fact has one owner here: "a timer is running / in its last minute" is the book's, passed on to the machine
/// (whose LEDs show it) only when it changes; "something is ringing" is the machine's ringing state over the
/// book's ringing timers and alarms, and a ring with nothing left to ring for is stopped here, not posted back to
/// the loop as a press. The watchdog's generation is the machine's alone: the loop's watchdog timer brings back
/// the generation it was armed with, and whether that one expired or is stale is decided here.
public struct Speaker: Sendable {
    public struct Settings: Sendable, Equatable {
        public var machine = SpeakerMachine.Settings()
        /// Quiet time (ready, nothing ringing) before the screen dims, and how far (`[screen]`).
        public var screen = ScreenSettings()
        /// The screen has a backlight the speaker sets (`SpeakerPorts.screen`); without one the page dims itself.
        public var backlight = false
        /// The timers are kept in a store (`SpeakerPorts.timerStore`), saved at every change.
        public var keepsTimers = false
        public init() {}
    }

    /// The moment an input is handled at, as the clocks read it.
    public struct Now: Sendable {
        public var reading: ClockReading
        public var calendar: any LocalCalendar
        /// Whether the wall clock has been set (an alarm set on a clock that never was is refused).
        public var clockSynchronized: Bool

        public init(reading: ClockReading, calendar: any LocalCalendar, clockSynchronized: Bool) {
            self.reading = reading
            self.calendar = calendar
            self.clockSynchronized = clockSynchronized
        }
    }

    /// Why the timers are saved, for what follows a save that failed.
    public struct TimersSave: Sendable, Equatable {
        /// A change (set, cancelled, rang, stopped): a failed save means a restart would lose it, which is said.
        public var afterChange = false
        /// Said after the confirmation of the client action that made the change, if its save fails.
        public var caveat: String?

        public init(afterChange: Bool = false, caveat: String? = nil) {
            self.afterChange = afterChange
            self.caveat = caveat
        }
    }

    public enum Input: Sendable, Equatable {
        /// An event for the state machine.
        case event(SpeakerEvent)
        /// The timer alarm (`armTimerAlarm`) went off: the next timer or alarm may be due.
        case timersDue
        /// The minute tick (`armTimerTick`) of running timers.
        case timerTick
        /// The retry of a failed save (`armTimersSaveRetry`).
        case retryTimersSave
        /// What the save asked for by `.saveTimers` did (nil: saved).
        case timersSaved(DeviceProblem?, TimersSave)
        /// What reading the saved timers at start found (`TimerBook.restarted`), once the speaker has started.
        case timersRestored(changes: [TimerChange], alarms: [AlarmChange], ringing: Bool)
        /// The screen was touched, or something happened worth looking at (`SpeakerActivity.wakesScreen`).
        case wakeScreen
        /// The quiet time (`armScreenIdle`) has passed.
        case screenIdle
        /// The backlight could not be set: the page dims its own picture from now on.
        case screenLightFailed
        /// What the always-on microphone said of itself.
        case microphone(MicrophoneEvent)
        /// How the volume command asked for by `.machine(.volume)` went (it needs the device).
        case volumeChanged(ActionOutcome)
    }

    public enum Effect: Sendable, Equatable {
        /// One of the machine's effects for the loop to carry out (never `.timer`, `.alarm` or `.stopRinging`,
        /// which are carried out here on the book).
        case machine(SpeakerEffect)
        /// Save the book; the loop reports the result as `.timersSaved` before it carries out the next effect.
        case saveTimers(TimerBook, TimersSave)
        case tell(SpeakerActivity)
        /// A timer or alarm is about to ring: a sound switched off by voice comes back on, so that it is heard.
        case soundOn
        /// Arms the timer alarm (`.timersDue`) after this long; nil: disarms it. The same for the others.
        case armTimerAlarm(Duration?)
        case armTimerTick(Duration?)
        case armTimersSaveRetry(Duration?)
        case armScreenIdle(Duration?)
        /// Sets the screen to `percent`, through the backlight if `backlight`; the loop tells `.screen` either way.
        case setScreen(percent: Int, backlight: Bool)
    }

    public let settings: Settings
    public private(set) var machine: SpeakerMachine
    public private(set) var timers = TimerBook()
    /// When the alarms were last checked (monotonic): an alarm found due since then was crossed while the speaker
    /// was on, by time or by a step of the wall clock (`TimerBook.alarmsDue`).
    public private(set) var alarmsChecked: BootTime?
    /// Why the last save of the timers failed (nil: the last one worked, or none was needed).
    public private(set) var timersSaveProblem: DeviceProblem?
    /// What the last client action (`.timer`, `.alarm`, `.volume`) did, for the sentence that follows it.
    public private(set) var lastActionOutcome: ActionOutcome?
    public private(set) var screenDimmed = false
    /// The backlight failed once: the page dims its own picture from then on.
    public private(set) var screenLightFailed = false
    /// Whether the always-on microphone is delivering audio, from its own events.
    public private(set) var microphoneUp = false
    /// What stops a question under way when the event of the last step does (`dropReason(_:watchdogExpired:settings:)`),
    /// in words for whoever typed it: the loop tells it with the question's `.dropped`.
    public private(set) var dropReason = ""

    /// Said after the confirmation of a timer or alarm set that could not be saved: it rings in this run, but the
    /// person must not believe it would survive a restart (issue #34: "Your soup timer is set", then gone).
    public static let setButNotSaved = "I couldn't save it, though, so a restart would lose it."
    /// The same for any other change (a cancelled timer would come back).
    public static let changedButNotSaved = "I couldn't save that, though, so a restart would undo it."
    /// How long after a failed save of the timers it is tried again (besides at every change).
    public static let timersSaveRetryInterval: Duration = .seconds(60)
    /// The longest the timer alarm is armed for, in seconds.
    static let longestWait: Double = 86_400
    /// The longest the timer alarm is armed for while an alarm is set: the wall clock is looked at this often, so
    /// that a step of it (time sync) brings an alarm's time nearer or further within a minute. (The alarm is armed
    /// on the monotonic clock, which a step does not move: armed once for 7:00 at 6:00, a +50 min step at 6:05 would
    /// have it ring at 7:50, missed.)
    static let longestAlarmWait: Double = 60

    public init(settings: Settings = Settings()) {
        self.settings = settings
        machine = SpeakerMachine(settings: settings.machine)
    }

    /// The saved state, read before the speaker starts: the book as it stands after the restart, and the mute.
    /// What the restart did to the timers is told at the start (`.timersRestored`).
    public mutating func restore(timers book: TimerBook, checkedAt now: BootTime, muted: Bool) {
        timers = book
        alarmsChecked = now
        if muted { _ = machine.handle(.setMuted(true)) }
    }

    /// What stops a question under way when `event` does, in words for whoever typed it.
    public static func dropReason(_ event: SpeakerEvent, watchdogExpired: SpeakerState?, settings: SpeakerMachine.Settings) -> String {
        if watchdogExpired == .searching { return "no answer came within \(settings.searchingLimitMS / 1000) s" }
        switch event {
        case .cancel: return "it was stopped (a long press, or the stop command)"
        case .talk, .press, .hold, .listen: return "the button (or the listen command) started another question"
        case .hotPhrase: return "the hot phrase started another question"
        case .toggleMute, .setMuted, .carryOut(.muteMicrophone): return "the microphone was muted"
        case .shutdown: return "the speaker is shutting down"
        default: return "it was stopped before its answer came"
        }
    }

    /// The screen as it is now, for the snapshot.
    public var screen: SpeakerActivity.Screen {
        SpeakerActivity.Screen(dimmed: screenDimmed, percent: screenDimmed ? settings.screen.dimLevel : 100,
                               backlight: settings.backlight && !screenLightFailed)
    }

    public mutating func step(_ event: SpeakerEvent, now: Now) -> [Effect] { step(.event(event), now: now) }

    public mutating func step(_ input: Input, now: Now) -> [Effect] {
        switch input {
        case .event(.watchdog(let generation)) where generation == machine.watchdogGeneration:
            // The watchdog of the state the speaker is in: it expired, which is told before what the machine does
            // about it. An older generation (armed for a state already left, fired just as it was left) is stale,
            // and the machine ignores it.
            let expired = machine.state
            dropReason = Self.dropReason(.watchdog(generation: generation), watchdogExpired: expired, settings: settings.machine)
            return [.tell(.watchdogExpired(expired, limitMS: settings.machine.limitMS(in: expired)))] + handle(.watchdog(generation: generation), now: now)
        case .event(let event):
            dropReason = Self.dropReason(event, watchdogExpired: nil, settings: settings.machine)
            return handle(event, now: now)
        case .timersDue:
            let changes = timers.due(now: now.reading.boot)
            let alarms = timers.alarmsDue(now: now.reading.wall, calendar: now.calendar,
                                          checkedAgo: alarmsChecked.map { now.reading.boot - $0 })
            alarmsChecked = now.reading.boot
            var effects = timersChanged(changes, alarms: alarms, now: now)
            if changes.contains(where: { $0.kind == .ringing }) || alarms.contains(where: { $0.kind == .ringing }) {
                effects += ring(now: now)
            }
            return effects
        case .timerTick:
            let running = timers.timers.filter(\.isRunning)
            var effects: [Effect] = []
            // Saved each minute a timer runs: after a reboot (a power cut) a timer goes on with the time left in the
            // file, so the file must not hold the time left when it was set (a restart in the same boot counts from
            // any save exactly, on the monotonic clock).
            if !running.isEmpty && settings.keepsTimers { effects.append(.saveTimers(timers, TimersSave())) }
            effects += schedule(now: now)  // the next minute is armed before anyone hears of this one
            // Not a timer at its very end: it is about to ring (its alarm may be handled just after this).
            let boot = now.reading.boot
            for timer in running where timer.remaining(at: boot) >= 1 {
                effects.append(.tell(.timer(.tick, timer, remaining: timer.remainingSeconds(at: boot))))
            }
            return effects
        case .retryTimersSave:
            return settings.keepsTimers ? [.saveTimers(timers, TimersSave())] : []
        case .timersSaved(let problem, let save):
            return saved(problem, save)
        case .timersRestored(let changes, let alarms, let ringing):
            let boot = now.reading.boot
            // Whoever follows the speaker's events learns at once what it counts down after a restart.
            var effects: [Effect] = timers.timers.filter(\.isRunning).map { .tell(.timer(.tick, $0, remaining: $0.remainingSeconds(at: boot))) }
            effects += timersChanged(changes, alarms: alarms, now: now)
            if ringing { effects += ring(now: now) }
            return effects
        case .wakeScreen:
            // Full brightness now (if dimmed), and the quiet time counted again from now if the speaker is ready.
            let dimmed = screenDimmed
            screenDimmed = false
            let after = machine.state == .ready ? settings.screen.dimAfterDuration : nil
            return (dimmed ? [setScreen(percent: 100)] : []) + [.armScreenIdle(after)]
        case .screenIdle:
            // Only if the speaker is still quiet: the quiet time may end just as something starts.
            guard machine.state == .ready, !screenDimmed else { return [] }
            screenDimmed = true
            return [setScreen(percent: settings.screen.dimLevel)]
        case .screenLightFailed:
            screenLightFailed = true
            return []
        case .microphone(let event):
            switch event {
            case .opened, .recovered: microphoneUp = true
            case .lost, .stopped: microphoneUp = false
            case .overrun: break
            }
            return []
        case .volumeChanged(let outcome):
            lastActionOutcome = outcome
            return []
        }
    }

    private func setScreen(percent: Int) -> Effect {
        .setScreen(percent: percent, backlight: settings.backlight && !screenLightFailed)
    }

    /// The machine handles `event`; what it asks of the book is done here, and the rest goes to the loop.
    private mutating func handle(_ event: SpeakerEvent, now: Now) -> [Effect] {
        var effects: [Effect] = []
        var silentRing = false
        for effect in machine.handle(event) {
            switch effect {
            case .timer(let action):
                let outcome = timers.apply(action, now: now.reading.boot)
                lastActionOutcome = ActionOutcome(outcome)
                effects += keep(outcome, now: now)
                silentRing = silentRing || nothingRings
            case .alarm(let action):
                let outcome = timers.apply(action, now: now.reading.wall, calendar: now.calendar, clockSynchronized: now.clockSynchronized)
                lastActionOutcome = ActionOutcome(outcome)
                effects += keep(outcome, now: now)
                silentRing = silentRing || nothingRings
            case .stopRinging:
                let stopped = timers.stopRinging()
                let alarms = timers.stopRingingAlarms(now: now.reading.wall, calendar: now.calendar)
                effects += timersChanged(stopped, alarms: alarms, now: now)
            case .setMicrophoneMuted(true):
                microphoneUp = false  // the loop stops the always-on microphone
                effects.append(.machine(effect))
            default:
                effects.append(.machine(effect))
            }
        }
        // The ringing timers were cancelled (from the screen, not by a press): the ring has nothing left to ring for,
        // and stops as a press would stop it, once this event's effects are done.
        if silentRing && nothingRings { effects += handle(.cancel, now: now) }
        return effects
    }

    /// Ringing, with no timer or alarm ringing.
    private var nothingRings: Bool {
        machine.state == .ringing && !timers.timers.contains(where: \.isRinging) && !timers.alarms.contains(where: \.isRinging)
    }

    /// A timer or alarm is due: it must be heard.
    private mutating func ring(now: Now) -> [Effect] {
        [.soundOn] + handle(.timerDue, now: now)
    }

    /// Saves and tells what a timer or alarm command changed; a change the person asked for (not a ring) that
    /// could not be saved gets its caveat after the confirmation (`.timersSaved`).
    private mutating func keep(_ outcome: TimerOutcome, now: Now) -> [Effect] {
        let asked = outcome.changes.contains { $0.kind != .ringing } || outcome.alarmChanges.contains { $0.kind != .ringing }
        let lost = outcome.changes.contains { $0.kind == .set } || outcome.alarmChanges.contains { $0.kind == .set }
        let caveat = asked ? (lost ? Self.setButNotSaved : Self.changedButNotSaved) : nil
        return timersChanged(outcome.changes, alarms: outcome.alarmChanges, caveat: caveat, now: now)
    }

    /// Saves what changed, arms the alarm for the next timer due, and tells the changes. Saved and armed first,
    /// told after: whoever hears of a change finds it already in effect.
    private mutating func timersChanged(_ changes: [TimerChange], alarms: [AlarmChange], caveat: String? = nil, now: Now) -> [Effect] {
        var effects: [Effect] = []
        if (!changes.isEmpty || !alarms.isEmpty) && settings.keepsTimers {
            effects.append(.saveTimers(timers, TimersSave(afterChange: true, caveat: caveat)))
        }
        effects += schedule(now: now)
        let boot = now.reading.boot
        for change in changes {
            let remaining = change.timer.remainingSeconds(at: boot)
            effects.append(.tell(.timer(SpeakerActivity.TimerEvent(rawValue: change.kind.rawValue) ?? .tick, change.timer, remaining: remaining)))
        }
        for change in alarms { effects.append(.tell(.alarm(change.kind, change.alarm))) }
        return effects
    }

    /// A save that fails is kept as `timersSaveProblem` and tried again at every change and every minute, until
    /// one works (a full disk freed, a state directory fixed).
    private mutating func saved(_ problem: DeviceProblem?, _ save: TimersSave) -> [Effect] {
        let before = timersSaveProblem
        timersSaveProblem = problem
        var effects: [Effect] = []
        if let problem {
            effects.append(.armTimersSaveRetry(Self.timersSaveRetryInterval))
            if before == nil { effects.append(.tell(.timersSaved(problem: problem.message))) }
            if save.afterChange {
                effects.append(.tell(.deviceProblem(DeviceProblem("\(problem.message); a restart would lose the timers' last change"))))
            }
            if let caveat = save.caveat { lastActionOutcome?.caveat = caveat }
        } else if before != nil {
            effects += [.armTimersSaveRetry(nil), .tell(.timersSaved(problem: nil))]
        }
        return effects
    }

    /// Arms the alarm for the next timer or alarm due and the minute tick, and tells the machine when a timer
    /// starts or stops running, or enters its last minute.
    private mutating func schedule(now: Now) -> [Effect] {
        let soonest = timers.timers.filter(\.isRunning).map { $0.remaining(at: now.reading.boot) }.min()
        var effects: [Effect] = []
        // Each on its own clock: a timer's end on the monotonic one, an alarm's time on the wall clock.
        let waits = [timers.nextTimerDeadline.map { $0 - now.reading.boot },
                     timers.nextAlarm.map { min($0 - now.reading.wall, Self.longestAlarmWait) }].compactMap { $0 }
        if let next = waits.min() {
            // At most a day ahead, and a day in milliseconds is far inside Int64 whatever the deadline (a NaN one
            // included: armed at once).
            let seconds = min(max(0, next), Self.longestWait)
            effects.append(.armTimerAlarm(.milliseconds(Saturating.int(seconds * 1000, .up, in: 0...Int(Self.longestWait) * 1000))))
        } else {
            effects.append(.armTimerAlarm(nil))
        }
        if let soonest {
            // Every minute, and also when the soonest enters its last minute (the LEDs quicken then).
            let untilLastMinute = soonest - 60
            let wait = untilLastMinute > 0 ? min(60, untilLastMinute) : 60
            effects.append(.armTimerTick(.milliseconds(Saturating.int(wait * 1000, .up, in: 0...60_000))))
        } else {
            effects.append(.armTimerTick(nil))
        }
        let running = soonest != nil, lastMinute = soonest.map { $0 <= 60 } ?? false
        if running != machine.timersRunning || lastMinute != machine.timerLastMinute {
            effects += handle(.timersRunning(running, lastMinute: lastMinute), now: now)
        }
        return effects
    }
}
