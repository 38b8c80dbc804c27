public import AudioCore
public import BoardCore
public import JSONKit
public import Timers

/// The speaker's decisions, with no I/O: the state machine, the timers and alarms, the screen's dimming, whether the
/// always-on microphone delivers audio, the network check's back-off, which false wakes are kept, the words of a
/// client action's outcome and an answer's `final`, in one value. `step` takes an input and the time it is handled
/// at and returns what to do, in one closed set of effects (`Effect`) that the loop (SpeakerRuntime) carries out
/// through the ports, reporting back what the ports said (`.timersSaved`, `.screenLightFailed`, `.volumeChanged`,
/// `.microphone`, `.networkChecked`).
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
        /// The speaker listens for the hot phrase and has the household's side (`SpeakerPorts.enrollment`): it can
        /// learn voices.
        public var canEnroll = false
        /// The microphone's device, as errors name it.
        public var microphoneDevice = "default"
        /// The microphone stays open for the hot phrase (`SpeakerPorts.hotPhrase`); without one it is opened only
        /// while a question is recorded.
        public var alwaysOnMicrophone = false
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
        /// How the volume command asked for by `.volume` went: the output's level after it, or why it failed.
        case volumeChanged(VolumeAction, Result<VolumeLevel, DeviceProblem>)
        /// Whether the light check of the service (`.checkNetwork`) found it answering.
        case networkChecked(Bool)
        /// Start a spoken enrollment of `phrase` (nil: `defaultPhrase`, the model's), unless the household's side
        /// is `unavailable` (and why); `fromButton`: the button's set-up hold, whose refusal is said aloud.
        case startEnrollment(phrase: String?, defaultPhrase: String, unavailable: String?, fromButton: Bool)
    }

    /// Everything the loop carries out, and nothing it does not: every case is one it acts on. The machine's own
    /// effects reach the loop as these (`handle`), except those carried out here: on the timer book, and the false
    /// wakes decided.
    public enum Effect: Sendable, Equatable {
        /// Start streaming the microphone into a new voice search (with the audio from before a hot phrase if asked),
        /// from the always-on microphone, or (`openMicrophone`) from one opened for this question alone.
        case startSearch(preRoll: Bool, openMicrophone: Bool, held: Bool = false)
        /// Open the always-on microphone, if it is not open (at the start, and unmuted); one that is missing is
        /// looked for until it appears.
        case openAlwaysOnMicrophone
        /// Start a text search for a typed question (`id` as in `SpeakerEvent.textQuery`).
        case startTextSearch(String, id: Int = 0)
        /// A typed question is not asked now, and why.
        case refuseQuestion(id: Int, query: String, reason: String)
        /// Forget the conversation state.
        case clearConversation
        /// End the upload; the search goes on to its answer.
        case endAudio
        /// The microphone stops feeding the question; its upload is left open (`SpeakerEffect.stopRecording`).
        case stopRecording
        case cancelSearch
        case speak(Utterance, id: Int)
        case stopSpeaking
        case playEarcon(Earcon, id: Int)
        case leds(LEDState)
        /// Carry out a volume command on the output; the loop reports the level as `.volumeChanged`.
        case volume(VolumeAction)
        /// Start an owner's command (not waited for).
        case runCommand(String)
        /// Release (true) or take back (false) the microphone, and remember the choice across restarts.
        case setMicrophoneMuted(Bool)
        /// Arms the watchdog for `ms`; its expiry comes back as `.watchdog(generation:)`.
        case armWatchdog(generation: Int, ms: Int)
        case disarmWatchdog
        case stateChanged(from: SpeakerState, to: SpeakerState)
        /// Speech is off: the answer is printed/logged instead.
        case show(Utterance)
        case stopped
        /// The detector keeps the wake that just turned out false as one of the household's negatives.
        case keepFalseWake
        /// The detector sets the answered wake aside (`SpeakerEffect.holdAnsweredWake`).
        case holdAnsweredWake
        /// The detector may learn the wake set aside (`SpeakerEffect.answeredWake`).
        case answeredWake
        /// An answer's `final`, told now: Houndify's words (`answer`), and what the speaker did itself (`done`).
        case final(transcript: String, answer: String, houndifyVoice: Bool = false, done: String = "", onDevice: Bool = false)
        /// An answer's `final` whose words the speaker chooses itself: told with the next words said or shown.
        case finalWithNextWords(transcript: String, done: String, onDevice: Bool = false)
        /// The answer to `.startEnrollment`: the session's first progress, or why it cannot start.
        case enrollmentAnswer(Result<EnrollmentProgress, DeviceProblem>)
        /// Enrollment `id` starts: the hot phrase is not listened for, the microphone's frames go to its takes.
        case startEnrolling(id: Int)
        /// Say `words` for enrollment `id` (0: no session); their end comes back as `.enrollment(id:, .spoken)`.
        case sayForEnrollment(String, id: Int)
        /// Record one take; it comes back as `.enrollment(id:, .captured)`, its samples kept by the loop.
        case startTake(id: Int)
        case stopTake
        /// Check the take recorded last; the verdict comes back as `.enrollment(id:, ...)`.
        case checkTake(id: Int, phrase: String)
        /// Keep the accepted takes; the result comes back as `.enrollment(id:, .saved)` or `.saveFailed`.
        case saveTakes(id: Int, phrase: String)
        case discardTakes
        /// Enrollment `id` is over and its words said: the hot phrase is listened for again.
        case endEnrolling(id: Int)
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
        /// The light check of the service while offline, after this long (`.networkChecked` brings its result).
        case armNetworkCheck(Duration?)
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
    /// The wait before the light check of the service now armed (nil: none is): offline, it is checked after
    /// `networkCheckFirst`, then less often, up to `networkCheckLongest`, until it answers.
    public private(set) var networkCheckDelay: Duration?
    /// When the latest hot-phrase wake started its question (for `FalseWake.kept`).
    private var lastWake: BootTime?
    /// The event being handled ended a wake that heard nothing (the machine's `.falseWake(.heardNothing)`).
    private var wakeHeardNothing = false
    /// What an answer held by the machine (`holdsAnswer`) stands for, told once the machine lets it out.
    private var heldAnswerTold: [Effect]?

    /// Offline, the service is checked this long after the failure, then at twice the last wait, up to the longest:
    /// back within seconds after a blink, and no more than a request a minute through a long outage.
    public static let networkCheckFirst = Duration.seconds(5)
    public static let networkCheckLongest = Duration.seconds(60)
    /// Said when a volume command could not reach the output.
    public static let volumeFailed = "Sorry, I couldn't change the volume."

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
                + watchNetwork()
        case .event(let event):
            dropReason = Self.dropReason(event, watchdogExpired: nil, settings: settings.machine)
            wakeHeardNothing = false
            let effects = handle(event, now: now)
            return told(event) + effects + watchNetwork()
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
            // No frames, no take (the recorder's wait is counted in frames): the session ends rather than waits.
            if case .lost(let why) = event, machine.enrollment != nil {
                return handle(.enrollment(id: machine.enrollmentID, .abort("the microphone was lost: \(why)")), now: now)
            }
            // A question being recorded has lost its audio (the SDK's AudioInterrupted): it fails now, rather than
            // send half of it or wait for the recording's watchdog.
            if case .lost(let why) = event, machine.state == .recording {
                let error = SearchError.audioInterrupted("microphone \(settings.microphoneDevice) was lost during the question: \(why)")
                return [.tell(.searchFailed(error))] + handle(.searchFailed(.microphone), now: now)
            }
            return []
        case .startEnrollment(let phrase, let defaultPhrase, let unavailable, let fromButton):
            // Spaces around and between the words are not part of the phrase (Household compares phrases so too).
            let text = phrase.map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") } ?? defaultPhrase
            let refusal = enrollmentRefusal(unavailable: unavailable)
            return handle(.enroll(phrase: text, refusal: refusal, fromButton: fromButton), now: now)
        case .volumeChanged(let action, .success(let level)):
            // One rule for every volume change, by voice or by Houndify: the level is said, at that level.
            var outcome = ActionOutcome(.changed(1), sentence: Self.volumeSentence(action, level))
            outcome.ownSentence = true
            lastActionOutcome = outcome
            return [.tell(.volume(level.percent, soundOff: level.soundOff))]
        case .volumeChanged(_, .failure(let problem)):
            lastActionOutcome = ActionOutcome(.failed, sentence: Self.volumeFailed)
            return [.tell(.deviceProblem(problem))]
        case .networkChecked(true):
            networkCheckDelay = nil
            // Told, so that the offline problem goes from screens and the snapshot now, not with the next answer.
            return (machine.offline ? [.tell(.online)] : []) + handle(.networkBack, now: now)
        case .networkChecked(false):
            // Not yet: checked again, less often, for as long as the speaker is offline.
            guard machine.offline, let delay = networkCheckDelay else {
                networkCheckDelay = nil
                return []
            }
            let next = min(delay * 2, Self.networkCheckLongest)
            networkCheckDelay = next
            return [.armNetworkCheck(next)]
        }
    }

    /// The words after a volume change: the level it is now at (said at that level).
    static func volumeSentence(_ action: VolumeAction, _ level: VolumeLevel) -> String {
        if case .mute(true) = action { return "Sound off." }
        return "Volume \(level.percent)."
    }

    /// "What time is it", by the speaker's clock: "It's 7:05 PM." A clock never set says so rather than a time.
    public static func timeSentence(_ now: Now) -> String {
        guard now.clockSynchronized else { return "My clock isn't set yet, so I can't tell the time." }
        let minute = CivilDate.local(now.reading.wall, now.calendar).minute
        let hour12 = (minute / 60 + 11) % 12 + 1
        let m = minute % 60
        return "It's \(hour12):\(m < 10 ? "0" : "")\(m) \(minute < 720 ? "AM" : "PM")."
    }

    /// "What's the date": "Today is Saturday, December 5, 2026."
    public static func dateSentence(_ now: Now) -> String {
        guard now.clockSynchronized else { return "My clock isn't set yet, so I can't tell the date." }
        let days = CivilDate.local(now.reading.wall, now.calendar).days
        let (year, month, day) = CivilDate.civil(days: days)
        let months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                      "November", "December"]
        return "Today is \(CivilDate.weekday(days: days).name), \(months[month - 1]) \(day), \(year)."
    }

    /// "What's your IP address": the first two, read out digit group by digit group.
    public static func ipAddressSentence(_ addresses: [String]) -> String {
        guard !addresses.isEmpty else { return "I don't have a network address." }
        let spoken = addresses.prefix(2).map { $0.split(separator: ".").joined(separator: " dot ") }
        return "My IP address is \(spoken.joined(separator: ", and "))."
    }

    /// The words for the last client action (Houndify's for the branch it took, or the speaker's own), and the
    /// conversation state to keep with them: Houndify's next answer depends on what the speaker really did.
    public func actionReply(_ responses: ActionResponses?) -> (text: String, conversationState: JSONValue?) {
        guard let outcome = lastActionOutcome else { return ("Sorry, something went wrong.", nil) }
        let (text, branch) = outcome.reply(from: responses)
        return (text, branch?.conversationState ?? responses?.conversationState)
    }

    /// Why a spoken enrollment cannot start now (nil: it can).
    private func enrollmentRefusal(unavailable: String?) -> String? {
        guard settings.canEnroll else {
            return "this speaker cannot learn voices: it does not listen for the hot phrase ([hotphrase] enabled = false)"
        }
        if let unavailable { return unavailable }
        if machine.enrollment != nil { return "an enrollment is under way already (ctl stop ends it)" }
        if machine.muted { return "the microphone is muted: unmute it to enroll" }
        if machine.state != .ready { return "the speaker is busy (\(machine.state.rawValue)): enroll when it is ready" }
        if !microphoneUp { return "microphone \(settings.microphoneDevice) is not available: nothing to record" }
        return nil
    }

    /// Offline (a search could not reach the service) with no check armed: the first is armed. The offline
    /// pattern and a screen's "No internet" then go when the service answers, not only after the next question.
    private mutating func watchNetwork() -> [Effect] {
        guard machine.offline, networkCheckDelay == nil else { return [] }
        networkCheckDelay = Self.networkCheckFirst
        return [.armNetworkCheck(Self.networkCheckFirst)]
    }

    /// What `event` stands for, told as the machine took it. An answer to a wake that heard nothing is no answer:
    /// the speaker goes back to ready without a word, so nothing tells or shows one (its `final` would put "Didn't
    /// get that!" on the screen). An answer held while the press that ended the question is down is told when it
    /// is let out (the tap's end), and not at all if it is quiet or the press cancels it.
    private mutating func told(_ event: SpeakerEvent) -> [Effect] {
        var told = Self.announced(event)
        if case .answer = event {
            if machine.holdsAnswer {
                heldAnswerTold = told
                return []
            }
            return wakeHeardNothing ? [] : told
        }
        if let held = heldAnswerTold, !machine.holdsAnswer {
            heldAnswerTold = nil
            if event == .tapEnded && !wakeHeardNothing { told += held }
        }
        return told
    }

    /// The activities an event itself stands for (a press, a transcript, an answer's `final`); state changes and
    /// the rest come from the machine's effects.
    static func announced(_ event: SpeakerEvent) -> [Effect] {
        switch event {
        case .partialTranscript(let text): [.tell(.partialTranscript(text))]
        case .answer(let answer): final(of: answer)
        case .talk, .hold, .press: [.tell(.button(.talk))]
        case .endTalk: [.tell(.button(.endTalk))]
        case .cancel: [.tell(.button(.cancel))]
        case .tapEnded: [.tell(.button(.release))]
        case .hotPhrase: [.tell(.hotPhrase)]
        case .stopPhrase: [.tell(.stopPhrase)]
        default: []
        }
    }

    /// An answer's `final`: what the speaker does itself is told as it does it, so what a client action or a local
    /// command makes it say is told with those words, not Houndify's words for it.
    private static func final(of answer: SpeakerAnswer) -> [Effect] {
        let transcript = answer.transcript
        let onDevice = answer.device != nil
        switch (answer.action, answer.localCommand) {
        case (nil, nil) where onDevice:
            // The time or the date by the speaker's clock: the words are its own, told as they are said.
            return [.finalWithNextWords(transcript: transcript, done: "", onDevice: true)]
        case (nil, nil):
            let display: [Effect] = answer.display.map { [.tell(.display($0))] } ?? []
            return display + [.final(transcript: transcript, answer: answer.text, houndifyVoice: answer.voice != nil)]
        case (.run(let command)?, _): return [.final(transcript: transcript, answer: answer.text, done: "ran \"\(command)\"")]
        case (.muteMicrophone?, _): return [.final(transcript: transcript, answer: answer.text, done: "muted the microphone")]
        case (nil, .stop?): return [.final(transcript: transcript, answer: "", done: "stopped", onDevice: onDevice)]
        case (nil, .volumeUp?): return [.finalWithNextWords(transcript: transcript, done: "turned the volume up", onDevice: onDevice)]
        case (nil, .volumeDown?): return [.finalWithNextWords(transcript: transcript, done: "turned the volume down", onDevice: onDevice)]
        case (nil, .ipAddress?), (.timer?, _), (.alarm?, _), (.volume?, _):
            return [.finalWithNextWords(transcript: transcript, done: "", onDevice: onDevice)]
        }
    }

    private func setScreen(percent: Int) -> Effect {
        .setScreen(percent: percent, backlight: settings.backlight && !screenLightFailed)
    }

    /// The machine handles `event`; what it asks of the book is done here, and the rest goes to the loop.
    private mutating func handle(_ event: SpeakerEvent, now: Now) -> [Effect] {
        var effects: [Effect] = []
        var silentRing = false
        // What the machine must hear of its own effects (a question with nothing to record), once they are done.
        var reports: [SpeakerEvent] = []
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
                effects.append(.setMicrophoneMuted(true))
            case .startSearch(let preRoll, let held):
                if preRoll { lastWake = now.reading.boot }
                if settings.alwaysOnMicrophone && !microphoneUp {
                    // The always-on microphone is missing: said now, rather than silence recorded.
                    let problem = "microphone \(settings.microphoneDevice) is not available: nothing to record"
                    effects.append(.tell(.searchFailed(.notReady(problem))))
                    reports.append(.searchFailed(.microphone))
                } else {
                    effects.append(.startSearch(preRoll: preRoll, openMicrophone: !settings.alwaysOnMicrophone, held: held))
                }
            case .falseWake(let wake):
                if wake == .heardNothing { wakeHeardNothing = true }
                // Seconds on the monotonic clock, whole milliseconds: a difference of two readings, never NaN.
                let since = lastWake.map { now.reading.boot - $0 }
                if let since, FalseWake.kept(wake, sinceWake: .milliseconds(Saturating.int(since * 1000, in: 0...Int(Int32.max)))) {
                    effects.append(.keepFalseWake)
                }
            case .startTextSearch(let query, let id): effects.append(.startTextSearch(query, id: id))
            case .refuseQuestion(let id, let query, let reason): effects.append(.refuseQuestion(id: id, query: query, reason: reason))
            case .clearConversation: effects.append(.clearConversation)
            case .endAudio: effects.append(.endAudio)
            case .stopRecording: effects.append(.stopRecording)
            case .cancelSearch: effects.append(.cancelSearch)
            case .speak(let utterance, let id): effects.append(.speak(utterance, id: id))
            case .stopSpeaking: effects.append(.stopSpeaking)
            case .playEarcon(let earcon, let id): effects.append(.playEarcon(earcon, id: id))
            case .leds(let leds): effects.append(.leds(leds))
            case .volume(let action): effects.append(.volume(action))
            case .runCommand(let command): effects.append(.runCommand(command))
            case .setMicrophoneMuted(false):
                effects.append(.setMicrophoneMuted(false))
                if settings.alwaysOnMicrophone { effects.append(.openAlwaysOnMicrophone) }
            case .armWatchdog(let generation, let ms): effects.append(.armWatchdog(generation: generation, ms: ms))
            case .disarmWatchdog: effects.append(.disarmWatchdog)
            case .stateChanged(let from, let to): effects.append(.stateChanged(from: from, to: to))
            case .show(let utterance): effects.append(.show(utterance))
            case .stopped: effects.append(.stopped)
            case .holdAnsweredWake: effects.append(.holdAnsweredWake)
            case .answeredWake: effects.append(.answeredWake)
            case .enrollmentAnswer(let answer): effects.append(.enrollmentAnswer(answer))
            case .startEnrolling(let id): effects.append(.startEnrolling(id: id))
            case .sayForEnrollment(let words, let id): effects.append(.sayForEnrollment(words, id: id))
            case .startTake(let id): effects.append(.startTake(id: id))
            case .stopTake: effects.append(.stopTake)
            case .checkTake(let id, let phrase): effects.append(.checkTake(id: id, phrase: phrase))
            case .saveTakes(let id, let phrase): effects.append(.saveTakes(id: id, phrase: phrase))
            case .discardTakes: effects.append(.discardTakes)
            case .enrollmentProgress(let progress): effects.append(.tell(.enrollment(progress)))
            case .endEnrolling(let id): effects.append(.endEnrolling(id: id))
            }
        }
        // The ringing timers were cancelled (from the screen, not by a press): the ring has nothing left to ring for,
        // and stops as a press would stop it, once this event's effects are done.
        if silentRing && nothingRings { effects += handle(.cancel, now: now) }
        // Up, and not muted: the hot phrase's microphone opens (muted, it stays closed until unmuted).
        if event == .started && settings.alwaysOnMicrophone && !machine.muted { effects.append(.openAlwaysOnMicrophone) }
        for report in reports { effects += handle(report, now: now) }
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
