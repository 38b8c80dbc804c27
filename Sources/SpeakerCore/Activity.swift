public import BoardCore
public import JSONKit
public import Logging
public import Timers

/// Stage times of one interaction, reported as one `timings` activity when it ends.
public struct InteractionTimings: Sendable, Equatable {
    public var trigger: ContinuousClock.Instant
    public var firstAudioSent: ContinuousClock.Instant?
    public var endOfSpeech: ContinuousClock.Instant?
    public var firstPartial: ContinuousClock.Instant?
    public var finalResult: ContinuousClock.Instant?
    public var firstTTSSample: ContinuousClock.Instant?
    public var speechEnd: ContinuousClock.Instant?

    public init(trigger: ContinuousClock.Instant) { self.trigger = trigger }

    /// The stages in order, with their names in the log line, the JSON event and the journal's fields.
    public static var stages: [(name: String, field: String, keyPath: KeyPath<InteractionTimings, ContinuousClock.Instant?>)] {
        [("first audio sent", "first_audio_sent", \.firstAudioSent),
         ("end of speech", "end_of_speech", \.endOfSpeech),
         ("first partial", "first_partial", \.firstPartial),
         ("final result", "final_result", \.finalResult),
         ("first TTS sample", "first_tts_sample", \.firstTTSSample),
         ("speech end", "speech_end", \.speechEnd)]
    }

    /// `timings (ms from trigger): first audio sent 12, end of speech 1830, ...` ("-": the stage did not happen).
    public var line: String {
        "timings (ms from trigger): " + Self.stages.map { "\($0.name) \(milliseconds($0.keyPath).map(String.init) ?? "-")" }
            .joined(separator: ", ")
    }

    public func milliseconds(_ keyPath: KeyPath<InteractionTimings, ContinuousClock.Instant?>) -> Int? {
        self[keyPath: keyPath].map { Int(trigger.duration(to: $0) / .milliseconds(1)) }
    }
}

/// What the button did, as scripts read it: a tap-to-talk press is "talk", its end "release".
public enum ButtonAction: String, Sendable {
    case talk, endTalk, cancel, release
}

/// Everything the speaker does that someone may want to know, as it happens: the one stream that the log, the
/// `--events json` lines, the state hook and tests all read. Each is told once, here.
public enum SpeakerActivity: Sendable, Equatable {
    case stateChanged(from: SpeakerState, to: SpeakerState)
    case button(ButtonAction)
    case hotPhrase
    /// The household's stop phrase was heard over the speaker's own sound.
    case stopPhrase
    case partialTranscript(String)
    /// How loud the microphone is while a question is recorded, in dB below full scale (RMS over the last
    /// `CaptureRouter.levelSamples`, five times a second): what a screen's level meter shows. Never logged.
    case level(dBFS: Double)
    /// `houndifyVoice`: the answer is played in Houndify's own voice (else espeak-ng speaks it). `answer` is what the
    /// speaker says (for a command it carries out itself, its own words, not Houndify's); `done`, for those, what
    /// it did ("stopped", "ran \"lights off\"", ...; "" when the words say it all or it only answered).
    case finalTranscript(transcript: String, answer: String, houndifyVoice: Bool = false, done: String = "", onDevice: Bool = false)
    /// How a typed question with a number (`SpeakerEvent.textQuery(_, id:)`) went: asked, refused, answered, failed
    /// or dropped. What the control API's reply to it is made of.
    case question(QuestionReport)
    case searchFailed(SearchError)
    /// The light check made while offline found Houndify answering again: the offline problem is over (a screen
    /// that shows "I can't reach the internet." takes it away; the snapshot's `offline` and `problem` go with it).
    case online
    /// Speech is switched off ([speaker] speech = false): the answer, shown instead.
    case answerShown(String)
    /// A sentence the speaker is starting to say, whatever it is (an answer, an announcement, the muted reply, an
    /// error): what a screen shows as a caption.
    case speech(String)
    /// What a screen shows of the answer that follows (Houndify's written response, HTML, templates, native data).
    case display(JSONValue)
    case leds(LEDState)
    /// The output volume, 0-100, and whether the sound is switched off (Houndify's MuteSound).
    case volume(Int, soundOff: Bool = false)
    case microphone(MicrophoneEvent)
    /// A device did not do what was asked (the output, the volume control, the microphone, speech).
    case deviceProblem(DeviceProblem)
    /// A busy state outlived its limit.
    case watchdogExpired(SpeakerState, limitMS: Int)
    case timings(InteractionTimings)
    /// The microphone was switched off (true) or on again by the owner.
    case muted(Bool)
    /// An alarm was set, cancelled, went off, was stopped or missed.
    case alarm(AlarmChange.Kind, SpeakerAlarm)
    /// A timer was set, changed, ticked (every minute), went off, was stopped or missed; `remaining` in seconds.
    case timer(TimerEvent, SpeakerTimer, remaining: Int)
    /// The screen dimmed after a quiet while, or came back to full brightness.
    case screen(Screen)
    /// The owner switched the LED ring on or off, or changed its brightness.
    case ring(RingSetting)
    /// The timers and alarms could not be saved (the problem), or, nil, are saved again after that: a screen
    /// shows that a restart would lose them for as long as it is so.
    case timersSaved(problem: String?)
    /// A spoken enrollment ("Teach it my voice", issue #37) moved on: a prompt, a take recorded, checked,
    /// accepted or refused, the end.
    case enrollment(EnrollmentProgress)

    /// The screen's brightness. `backlight`: the speaker set the display's backlight itself; else a kiosk page
    /// dims its own picture to `percent`.
    public struct Screen: Sendable, Equatable {
        public var dimmed: Bool
        public var percent: Int
        public var backlight: Bool
        public init(dimmed: Bool, percent: Int, backlight: Bool) {
            self.dimmed = dimmed
            self.percent = percent
            self.backlight = backlight
        }

        public var fields: [(String, JSONValue)] {
            [("dimmed", .bool(dimmed)), ("percent", .int(Int64(percent))), ("backlight", .bool(backlight))]
        }
    }

    /// One step of a typed question's way, by its number.
    public struct QuestionReport: Sendable, Equatable {
        public enum Status: Sendable, Equatable {
            /// Its search has started.
            case asked
            /// Not asked, and why (`SpeakerEffect.refuseQuestion`).
            case refused(String)
            /// Its answer: what was said (or shown) and done, as its `final` event.
            case answered(transcript: String, answer: String, done: String)
            /// The search failed; the speaker said why.
            case failed(SearchError)
            /// Stopped before its answer came, and by what.
            case dropped(String)
        }
        public var id: Int
        public var query: String
        public var status: Status
        public init(id: Int, query: String, _ status: Status) {
            self.id = id
            self.query = query
            self.status = status
        }

        /// The question is over: nothing more will be told of it.
        public var isEnd: Bool { if case .asked = status { false } else { true } }

        public var fields: [(String, JSONValue)] {
            var fields: [(String, JSONValue)] = [("id", .int(Int64(id))), ("query", .string(query))]
            switch status {
            case .asked: fields.append(("status", "asked"))
            case .refused(let reason): fields += [("status", "refused"), ("reason", .string(reason))]
            case .answered(let transcript, let answer, let done):
                fields += [("status", "answered"), ("transcript", .string(transcript)), ("answer", .string(answer))]
                if !done.isEmpty { fields.append(("done", .string(done))) }
            case .failed(let error):
                fields += [("status", "failed"), ("reason", .string(error.sentence)), ("detail", .string(error.detail))]
            case .dropped(let reason): fields += [("status", "dropped"), ("reason", .string(reason))]
            }
            return fields
        }
    }

    public enum TimerEvent: String, Sendable {
        case set, cancelled, paused, resumed, extended, reset, ringing, stopped, missed, tick
    }
}

extension SpeakerActivity {
    /// The event's kind: the JSON `event` and the journal's `HOUND_SPEAKER_EVENT` field.
    public var kind: String {
        switch self {
        case .stateChanged: "state"
        case .button: "button"
        case .hotPhrase: "hotphrase"
        case .stopPhrase: "stopphrase"
        case .partialTranscript: "partial"
        case .level: "level"
        case .finalTranscript: "final"
        case .question: "question"
        case .searchFailed: "error"
        case .online: "online"
        case .answerShown: "answer"
        case .speech: "speech"
        case .display: "display"
        case .leds: "leds"
        case .volume: "volume"
        case .microphone: "microphone"
        case .deviceProblem: "device"
        case .watchdogExpired: "watchdog"
        case .timings: "timings"
        case .timer: "timer"
        case .muted: "mute"
        case .alarm: "alarm"
        case .screen: "screen"
        case .ring: "ring"
        case .timersSaved: "timers_saved"
        case .enrollment: "enroll"
        }
    }

    /// The fields of the event, in order (the JSON object after `event`, and the journal's fields).
    public var fields: [(String, JSONValue)] {
        switch self {
        case .stateChanged(let from, let to): [("from", .string(from.rawValue)), ("to", .string(to.rawValue))]
        case .button(let action): [("action", .string(action.rawValue))]
        case .hotPhrase, .stopPhrase, .online: []
        case .partialTranscript(let text): [("text", .string(text))]
        case .level(let dBFS): [("dbfs", .double((dBFS * 10).rounded() / 10))]
        case .finalTranscript(let transcript, let answer, let houndifyVoice, let done, let onDevice):
            // "source": "device": understood by the speaker's own recogniser, Houndify being out of reach.
            [("transcript", .string(transcript)), ("answer", .string(answer))] + (houndifyVoice ? [("voice", .string("houndify"))] : [])
                + (done.isEmpty ? [] : [("done", .string(done))]) + (onDevice ? [("source", .string("device"))] : [])
        case .question(let report): report.fields
        case .searchFailed(let error):
            [("kind", .string(error.failure.rawValue)), ("detail", .string(error.detail)), ("said", .string(error.sentence))]
                + (error.code.isEmpty ? [] : [("code", .string(error.code))])
        case .answerShown(let text): [("text", .string(text))]
        case .speech(let text): [("text", .string(text))]
        case .display(let data): [("data", data)]
        case .leds(let state): [("show", .string(state.rawValue))]
        case .volume(let percent, let off): [("percent", .int(Int64(percent))), ("sound_off", .bool(off))]
        case .microphone(let event):
            switch event {
            case .opened(let device, let rate, let channels):
                [("status", .string("opened")), ("device", .string(device)), ("rate", .int(Int64(rate))), ("channels", .int(Int64(channels)))]
            case .overrun: [("status", .string("overrun"))]
            case .lost(let problem): [("status", .string("lost")), ("problem", .string(problem))]
            case .recovered: [("status", .string("recovered"))]
            case .stopped: [("status", .string("stopped"))]
            }
        case .deviceProblem(let problem): [("problem", .string(problem.message))]
        case .watchdogExpired(let state, let limit): [("state", .string(state.rawValue)), ("limit_ms", .int(Int64(limit)))]
        case .timings(let t):
            [("line", .string(t.line))] + InteractionTimings.stages.compactMap { stage in
                t.milliseconds(stage.keyPath).map { ("\(stage.field)_ms", .int(Int64($0))) }
            }
        case .muted(let on): [("muted", .bool(on))]
        case .alarm(let kind, let alarm):
            [("change", .string(kind.rawValue)), ("id", .int(Int64(alarm.id))), ("name", .string(alarm.name)),
             ("time", .string(alarm.spokenTime)), ("days", .array(alarm.days.sorted().map { .string($0.name) })),
             ("next_at", { if case .scheduled(let at) = alarm.status { .double(at) } else { .null } }())]
        case .timer(let event, let timer, let remaining):
            [("change", .string(event.rawValue)), ("id", .int(Int64(timer.id))), ("name", .string(timer.name)),
             ("seconds", .int(Int64(timer.seconds))), ("remaining_s", .int(Int64(remaining)))]
        case .screen(let screen): screen.fields
        case .ring(let ring): [("on", .bool(ring.on)), ("percent", .int(Int64(ring.percent)))]
        case .timersSaved(let problem): [("saved", .bool(problem == nil)), ("problem", problem.map { .string($0) } ?? .null)]
        case .enrollment(let progress): progress.fields
        }
    }

    /// One JSON object on one line (`run --events json`), ASCII only.
    /// "event" first, then the fields in their order (scripts and people read it left to right).
    public var json: String {
        JSONValue.asciiJSON(orderedMembers: [("event", .string(kind))] + fields)
    }

    /// The kind and the fields as log metadata (text as it is, numbers as digits).
    public var metadata: Logger.Metadata {
        var metadata: Logger.Metadata = ["event": .string(kind)]
        for (name, value) in fields {
            if case .string(let text) = value { metadata[name] = .string(text) } else { metadata[name] = .string(value.asciiJSON()) }
        }
        return metadata
    }

    /// How the log tells it (nil: not logged; partial transcripts go at debug level, they come by the hundred).
    public var logEntry: (level: Logger.Level, message: String)? {
        switch self {
        case .stateChanged(let from, let to): (.info, "state \(from.rawValue) -> \(to.rawValue)")
        case .button(let action): (.info, "button: \(action.rawValue)")
        case .hotPhrase: (.notice, "hot phrase heard")
        case .stopPhrase: (.notice, "stop phrase heard")
        case .partialTranscript(let text): (.debug, "partial transcript: \(text)")
        case .finalTranscript(let transcript, _, _, let done, _):
            (.info, "final transcript: \"\(transcript)\"" + (done.isEmpty ? "" : " (\(done))"))
        case .question(let report):
            switch report.status {
            // Its answer or failure is logged as its `final` or `error`.
            case .asked, .answered, .failed: (.debug, "typed question \(report.id): \(report.fields[2].1.stringValue ?? "")")
            case .refused(let reason): (.notice, "typed question \(report.id) refused: \(reason)")
            case .dropped(let reason): (.info, "typed question \(report.id) dropped: \(reason)")
            }
        case .searchFailed(let error): (.warning, "search failed: \(error.detail) (said: \"\(error.sentence)\")")
        case .online: nil  // the loop logs the check that found it ("Houndify answers again")
        case .answerShown(let text): (.notice, "answer: \(text)")
        case .speech(let text): (.debug, "saying: \(text)")
        case .display: nil
        case .level: nil
        case .leds: nil
        case .volume(let percent, let off): (.info, off ? "sound off (volume \(percent) when it is back on)" : "volume \(percent)")
        case .microphone(let event):
            switch event {
            case .opened(let device, let rate, let channels): (.debug, "microphone \(device) open: \(rate) Hz, \(channels) channel(s)")
            case .overrun: (.warning, "microphone overrun: audio was lost and capture recovered")
            case .lost(let problem): (.error, "microphone lost: \(problem); looking for it every second (the button says so until it is back)")
            case .recovered: (.notice, "microphone is back")
            case .stopped: nil
            }
        case .deviceProblem(let problem): (.error, problem.message)
        case .watchdogExpired(let state, let limit): (.warning, "watchdog: still \(state.rawValue) after \(limit) ms")
        case .timings(let t): (.notice, t.line)
        case .muted(let on): (.notice, on ? "muted: the microphone is off" : "unmuted: the microphone is on")
        case .alarm(let kind, let alarm):
            switch kind {
            case .ringing: (.notice, "\(alarm.spokenName) is ringing")
            case .missed: (.warning, "\(alarm.spokenName) fell due while the speaker was off, too long ago to ring")
            default: (.info, "\(alarm.spokenName): \(kind.rawValue)")
            }
        case .timer(let event, let timer, let remaining):
            switch event {
            case .tick: (.debug, "\(timer.spokenName): \(SpokenDuration.words(remaining)) left")
            case .ringing: (.notice, "\(timer.spokenName) is ringing")
            case .missed: (.warning, "\(timer.spokenName) fell due while the speaker was off, too long ago to ring")
            case .set: (.info, "\(timer.spokenName) set for \(SpokenDuration.words(timer.seconds))")
            default: (.info, "\(timer.spokenName) \(event.rawValue) (\(SpokenDuration.words(remaining)) left)")
            }
        case .screen(let screen): (.debug, screen.dimmed ? "screen dimmed to \(screen.percent) %" : "screen at full brightness")
        case .ring(let ring): (.info, ring.on ? "LED ring on at \(ring.percent) %" : "LED ring off")
        // The failure itself is logged as the device problem told with it.
        case .timersSaved(let problem): problem == nil ? (.notice, "timers saved again: a restart keeps them") : nil
        case .enrollment(let p):
            switch p.step {
            case .prompting where p.lastRefusal != nil: (.notice, "enrollment of \"\(p.phrase)\": take refused: \(p.lastRefusal!.detail)")
            case .done: (.notice, "enrollment of \"\(p.phrase)\": \(p.summary)")
            case .failed, .aborted: (.notice, "enrollment of \"\(p.phrase)\" \(p.step.rawValue): \(p.reason ?? "")")
            default: (.info, "enrollment of \"\(p.phrase)\": \(p.summary), \(p.step.rawValue)")
            }
        }
    }
}


extension SpeakerActivity {
    /// Something a person would look at the screen for: it comes back to full brightness.
    public var wakesScreen: Bool {
        switch self {
        case .stateChanged, .button, .hotPhrase, .stopPhrase, .volume, .muted, .answerShown, .alarm, .enrollment: true
        case .timer(let event, _, _): event != .tick
        default: false
        }
    }
}

/// What the speaker is doing and holds at one moment: what a screen or script shows when it connects, before the
/// activities that follow.
public struct SpeakerSnapshot: Sendable, Equatable {
    public var state: SpeakerState
    public var muted: Bool
    /// The last search could not reach Houndify.
    public var offline: Bool
    public var volume: Int
    public var soundOff: Bool
    public var timers: [SpeakerTimer]
    public var alarms: [SpeakerAlarm]
    /// The monotonic time it was taken at (`LoopClock.bootTime`): timers' remaining time is counted from it.
    public var now: BootTime
    public var screen: SpeakerActivity.Screen
    /// Why the timers and alarms as they are now could not be saved (nil: they are saved, or kept in memory
    /// only by design). Until a save works (tried at each change and every minute) a restart would lose changes.
    public var timersSaveProblem: String?
    /// The spoken enrollment under way, or the last one (nil: none since the start).
    public var enrollment: EnrollmentProgress?
    /// Frames of the microphone the hot phrase detector did not hear because it had fallen behind, since the
    /// start (`HotPhraseWorker`); 0 without a detector.
    public var hotPhraseFramesDropped: Int
    /// The last of each, as the activities told them (`record`): the question's words so far, the last answer's
    /// transcript, words and display, why the last question failed (until the next answer; the offline problem
    /// also until the service answers again, `online`), the LEDs shown.
    public var partial = ""
    public var transcript = ""
    public var answer = ""
    public var problem = ""
    public var display: JSONValue = .null
    public var leds: LEDState = .ready
    /// The LED ring's setting; nil: the board has no ring.
    public var ring: RingSetting?
    /// The activity just before was a display (it belongs to the final transcript right after it).
    var displayJustTold = false
    /// What `problem` is about (its sentence depends on the settings: "..., but I can still ...").
    var problemFailure: SearchFailure?

    public init(state: SpeakerState, muted: Bool, offline: Bool, volume: Int, soundOff: Bool, timers: [SpeakerTimer],
                alarms: [SpeakerAlarm], now: BootTime,
                screen: SpeakerActivity.Screen = .init(dimmed: false, percent: 100, backlight: false),
                timersSaveProblem: String? = nil, enrollment: EnrollmentProgress? = nil, hotPhraseFramesDropped: Int = 0) {
        self.enrollment = enrollment
        self.hotPhraseFramesDropped = hotPhraseFramesDropped
        self.screen = screen
        self.timersSaveProblem = timersSaveProblem
        self.state = state
        self.muted = muted
        self.offline = offline
        self.volume = volume
        self.soundOff = soundOff
        self.timers = timers
        self.alarms = alarms
        self.now = now
    }

    /// Keeps what `activity` tells of the conversation and the LEDs (the speaker's loop records each activity it
    /// tells, before its observers hear of it).
    public mutating func record(_ activity: SpeakerActivity) {
        switch activity {
        case .partialTranscript(let text): partial = text
        case .stateChanged(_, .recording): partial = ""
        case .display(let data): display = data
        case .finalTranscript(let transcript, let answer, _, _, _):
            // An answer without a display of its own clears the last one's.
            if !displayJustTold { display = .null }
            self.transcript = transcript
            self.answer = answer
            partial = ""
            problem = ""
            problemFailure = nil
        case .answerShown(let text): answer = text
        case .searchFailed(let error):
            problem = error.sentence
            problemFailure = error.failure
        case .online where problemFailure == .offline:
            problem = ""
            problemFailure = nil
        case .leds(let leds): self.leds = leds
        case .enrollment(let progress): enrollment = progress
        case .ring(let setting): ring = setting
        default: break
        }
        displayJustTold = if case .display = activity { true } else { false }
    }
}
