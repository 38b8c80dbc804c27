import SpeakerCore
import AudioCore
import BoardCore
import Logging
import Synchronization
import Timers

/// One run of the speaker's loop (`SpeakerLoop.run`), and the loop's own state, local to that call: only the loop
/// reads or changes it, so it needs no lock. Every input comes in through the loop's one queue, in order (the
/// speech thread's first sample too, as `.firstSpeechSample`); other threads read only what the loop publishes
/// after each step of the core (`SpeakerLoop.snapshot`).
struct LoopRun {
    let loop: SpeakerLoop
    /// The speaker's decisions (Speaker.swift): the state machine, the timers, the screen, the microphone's state,
    /// the last action's outcome. The loop only carries out what `step` returns.
    var speaker: Speaker
    var search: (any VoiceSearchSession)?
    /// The watchdog now armed (`armWatchdog`): made for its arming, it brings the generation it was armed with.
    var watchdog: (any LoopTimer)?
    var searchID = 0
    /// The microphone opened for one question (no hot phrase), or for good (listening for the hot phrase).
    var questionMicrophone: (any MicrophoneStream)?
    var alwaysOnMicrophone: (any MicrophoneStream)?
    var timings: InteractionTimings?
    /// The `final` of an answer whose words the speaker chooses itself (a client action's outcome, the volume,
    /// the IP address): told with those words, once they are known (`tellPendingFinal`).
    var pendingFinal: (transcript: String, done: String, onDevice: Bool)?
    /// The typed question whose search is under way, when someone waits for it (its id is not 0).
    var question: (id: Int, query: String)?
    /// What carrying out an effect made the core decide (a told activity that woke the screen, a save's result):
    /// carried out next, before the effects after it.
    var followUps: [Speaker.Effect] = []
    /// Who waits for the answer to `ctl enroll` (LoopEnrollment.swift), answered within the step that starts it.
    var enrollmentReply: CheckedContinuation<Result<EnrollmentProgress, DeviceProblem>, Never>?
    /// The take recorded last for a spoken enrollment, until the core has it checked.
    var take: (id: Int, samples: [Int16])?

    private let pulse: any LoopTimer
    /// Set for the moment the next timer is due.
    private let timerAlarm: any LoopTimer
    /// Every minute while a timer counts down: the `tick` activity.
    private let timerTick: any LoopTimer
    /// When the screen dims, armed whenever the speaker becomes ready.
    private let screenIdle: any LoopTimer
    /// Set while the timers could not be saved: the save is tried again.
    private let timersSaveRetry: any LoopTimer
    /// Set while the speaker is offline: the next light check of the service (`reachable`).
    private let networkCheck: any LoopTimer

    let ports: SpeakerPorts
    private let settings: SpeakerLoopSettings
    let logger: Logger
    let continuation: AsyncStream<LoopInput>.Continuation
    let router: CaptureRouter

    init(loop: SpeakerLoop) {
        self.loop = loop
        ports = loop.ports
        settings = loop.settings
        logger = loop.logger
        continuation = loop.continuation
        router = loop.router
        speaker = loop.start.core
        let continuation = loop.continuation
        let clock = loop.ports.clock
        pulse = clock.makeTimer { continuation.yield(.heartbeat) }
        timerAlarm = clock.makeTimer { continuation.yield(.timersDue) }
        timerTick = clock.makeTimer { continuation.yield(.timerTick) }
        screenIdle = clock.makeTimer { continuation.yield(.screenIdle) }
        timersSaveRetry = clock.makeTimer { continuation.yield(.retryTimersSave) }
        networkCheck = clock.makeTimer { continuation.yield(.checkNetwork) }
    }

    /// The loop itself (`SpeakerLoop.run` makes the group): every input in order until `.shutdown` is handled.
    mutating func run(in group: inout DiscardingTaskGroup) async {
        if let board = ports.board {
            group.addTask { [continuation] in
                for await intent in board.intents {
                    switch intent {
                    case .talk: continuation.yield(.event(.hold))  // hold-to-talk: TalkIntent.talk
                    case .press: continuation.yield(.event(.press))
                    case .tapEnded: continuation.yield(.event(.tapEnded))
                    case .endTalk: continuation.yield(.event(.endTalk))
                    case .cancel: continuation.yield(.event(.cancel))
                    case .doublePress: continuation.yield(.event(.toggleMute))
                    case .teachVoice: continuation.yield(.enrollFromButton)
                    case .muteSwitch(let on): continuation.yield(.event(.setMuted(on)))
                    }
                }
            }
        }
        let startup = loop.start.startup
        if let problem = startup.muteProblem { tell(.deviceProblem(problem)) }
        // Before any frame can come: the detector's thread, until the loop ends (below).
        router.startDetector()
        var iterator = loop.inputs.makeAsyncIterator()
        inputs: while let input = await iterator.next() {
            if case .checkNetwork = input {
                // On a thread of the service's own (EndpointProbe), a child of the loop like a search.
                group.addTask { [continuation, search = ports.search] in continuation.yield(.networkChecked(await search.reachable())) }
                continue
            }
            guard let core = enrollmentInput(input) ?? take(input) else {
                if perform([], in: &group) { break inputs }  // what telling it made the core decide
                continue
            }
            guard case .event(let event) = core else {
                // Not for the machine (a timer due, the screen's quiet time): the core decides, the loop does.
                if step(core, in: &group) { break inputs }
                continue
            }
            if handle(event, in: &group) { break inputs }
            if event == .started {
                beat()
                if started(startup, in: &group) { break inputs }
            }
        }
        // The microphones are stopped (shutDown): what the detector has not heard yet leads nowhere.
        await router.stopDetector()
        // Whoever waits for the loop to settle is let go: it has ended, nothing it sent will be handled now.
        continuation.finish()
        while let input = await iterator.next() {
            if case .barrier(let waiting) = input { waiting.resume() }
        }
        group.cancelAll()
    }

    /// Steps the core and publishes what it holds after the step, read at once (the screen's brightness belongs
    /// to the same moment as the state beside it). Published before any effect is carried out: whoever
    /// reads the snapshot while they are finds the state they tell of.
    private mutating func step(core input: Speaker.Input) -> [Speaker.Effect] {
        let now = speakerNow()
        let effects = speaker.step(input, now: now)
        loop.publish(speaker)
        return effects
    }

    /// The machine alone decides whether our own sound is playing; the router only follows it, after every input
    /// that reaches the machine.
    private func followSound() {
        router.setOwnSound(speaker.machine.ownSound)
    }

    /// The clocks as the core reads them for one step.
    private func speakerNow() -> Speaker.Now {
        Speaker.Now(reading: ports.clock.reading, calendar: ports.clock.calendar, clockSynchronized: ports.system.clockSynchronized())
    }

    /// Hands an event to the core and carries out what it decides. True when the loop must end.
    private mutating func handle(_ event: SpeakerEvent, in group: inout DiscardingTaskGroup) -> Bool {
        step(.event(event), in: &group)
    }

    /// Hands an input to the core and carries out what it decides. True when the loop must end.
    private mutating func step(_ input: Speaker.Input, in group: inout DiscardingTaskGroup) -> Bool {
        let effects = step(core: input)
        followSound()
        return perform(effects, in: &group)
    }

    /// Carries out the core's effects in order. What the ports answered that the machine must hear of (a search or
    /// the microphone that could not start: `.searchFailed`) goes to the core in the same step, once the effects
    /// that came with it are done, not posted to the back of the queue behind other inputs. True when the loop
    /// must end.
    private mutating func perform(_ effects: [Speaker.Effect], in group: inout DiscardingTaskGroup) -> Bool {
        var reports: [SpeakerEvent] = []
        var queue = followUps[...] + effects
        followUps = []
        while let effect = queue.popFirst() {
            if perform(effect, reports: &reports, in: &group) { return true }
            guard !followUps.isEmpty else { continue }
            queue = followUps[...] + queue
            followUps = []
        }
        for event in reports {
            if handle(event, in: &group) { return true }
        }
        return false
    }

    /// Turns an input into the core's (nil: nothing for the core).
    private mutating func take(_ input: LoopInput) -> Speaker.Input? {
        switch input {
        case .event(let event):
            return .event(event)
        case .endpoint(let id, let decision):
            guard id == searchID else { return nil }
            switch decision {
            case .speechStarted: return nil
            case .endOfSpeech: return .event(.endOfSpeech)
            case .maxLength: return .event(.questionLimit)
            case .noSpeech: return .event(.noSpeech)
            }
        case .search(let id, let event):
            guard id == searchID else { return nil }
            return translate(event).map { .event($0) }
        case .played(let event, let problem):
            if let problem { tell(.deviceProblem(DeviceProblem(problem))) }
            return .event(event)
        case .microphone(let event):
            followUps += step(core: .microphone(event))
            tell(.microphone(event))
            return nil
        case .heartbeat:
            beat()
            return nil
        case .tell(let activity):
            tell(activity)
            return nil
        case .firstSpeechSample(let at):
            if timings?.firstTTSSample == nil { timings?.firstTTSSample = at }
            return nil
        case .wakeScreen:
            return .wakeScreen
        case .ring(let setting):
            ports.board?.setRing(setting)
            tell(.ring(setting))
            return nil
        case .screenIdle:
            return .screenIdle
        case .timersDue:
            return .timersDue
        case .retryTimersSave:
            return .retryTimersSave
        case .startEnrollment, .enrollFromButton, .enrollment, .takeRecorded:
            return nil  // enrollmentInput's (run() asks it first)
        case .barrier(let waiting):
            waiting.resume()
            return nil
        case .checkNetwork:
            return nil  // run() starts the check
        case .networkChecked(let answers):
            if answers && speaker.machine.offline { logger.notice("Houndify answers again: no longer offline") }
            return .networkChecked(answers)
        case .timerTick:
            return .timerTick
        }
    }

    /// One heartbeat, and the next one armed (only after this one was taken: at most one waits in the queue).
    private func beat() {
        guard let heartbeat = settings.heartbeat else { return }
        heartbeat.beat()
        if let interval = heartbeat.interval { pulse.schedule(after: interval) }
    }

    /// The interaction's `stage` happens now; `once`: only its first time counts.
    private mutating func mark(_ stage: WritableKeyPath<InteractionTimings, ContinuousClock.Instant?>, once: Bool = true) {
        let now = ports.clock.now
        if once, timings?[keyPath: stage] != nil { return }
        timings?[keyPath: stage] = now
    }

    private mutating func translate(_ event: SearchEvent) -> SpeakerEvent? {
        switch event {
        case .partialTranscript(let text):
            mark(\.firstPartial)
            return .partialTranscript(text)
        case .safeToStopAudio:
            return .endOfSpeech
        case .answer(let answer):
            mark(\.finalResult, once: false)
            return .answer(answer)
        case .failed(var error):
            error.offlineCommands = settings.machine.offlineCommands
            tell(.searchFailed(error))
            questionFailed(error)
            return .searchFailed(error.failure, said: error.spoken)
        }
    }

    /// The question's recording ends: no more audio goes to its search (which `.endAudio` then finishes, and a press
    /// that may yet be a long press leaves open), and its own microphone, if it has one, is closed.
    private mutating func stopRecording() {
        router.detach()
        mark(\.endOfSpeech)
        questionMicrophone?.stop()
        questionMicrophone = nil
    }

    /// An answer's `final`, and, for a typed question someone waits for, its report.
    private mutating func tellFinal(transcript: String, answer: String, houndifyVoice: Bool = false, done: String = "", onDevice: Bool = false) {
        tell(.finalTranscript(transcript: transcript, answer: answer, houndifyVoice: houndifyVoice, done: done, onDevice: onDevice))
        if let question = question.take() {
            tell(.question(.init(id: question.id, query: question.query, .answered(transcript: transcript, answer: answer, done: done))))
        }
    }

    /// The `final` of an answer whose words the speaker chose itself, with those words (said or shown now).
    private mutating func tellPendingFinal(_ words: String) {
        guard let pending = pendingFinal.take() else { return }
        tellFinal(transcript: pending.transcript, answer: words, done: pending.done, onDevice: pending.onDevice)
    }

    private mutating func questionFailed(_ error: SearchError) {
        if let question = question.take() {
            tell(.question(.init(id: question.id, query: question.query, .failed(error))))
        }
    }

    /// Logs an activity, records it in the published snapshot (the conversation's last words, the LEDs: whoever
    /// reads the snapshot after hearing of it finds it there), and hands it to every observer.
    mutating func tell(_ activity: SpeakerActivity) {
        if let entry = activity.logEntry {
            // Every field is metadata too: under systemd each becomes a journal field (HOUND_SPEAKER_EVENT=timings).
            // Built only when the level is logged (an autoclosure): partial transcripts come by the hundred.
            logger.log(level: entry.level, "\(entry.message)", metadata: activity.metadata)
        }
        loop.published.withLock { $0.record(activity) }
        for observer in loop.observers { observer(activity) }
        if activity.wakesScreen { followUps += step(core: .wakeScreen) }
    }

    private mutating func setScreen(percent: Int, backlight: Bool) {
        var lit = false
        if backlight, let light = ports.screen {
            do throws(DeviceProblem) {
                try light.set(percent: percent)
                lit = true
            } catch {
                followUps += step(core: .screenLightFailed)
                tell(.deviceProblem(DeviceProblem("\(error.message); the screen's page dims its own picture instead")))
            }
        }
        tell(.screen(SpeakerActivity.Screen(dimmed: percent < 100, percent: percent, backlight: lit)))
    }

    private func arm(_ timer: any LoopTimer, _ after: Duration?) {
        if let after { timer.schedule(after: after) } else { timer.disarm() }
    }

    /// Carries out one of the core's effects, adding to `reports` what the machine must hear of it; returns true
    /// when the loop must end.
    private mutating func perform(_ effect: Speaker.Effect, reports: inout [SpeakerEvent], in group: inout DiscardingTaskGroup) -> Bool {
        switch effect {
        case .saveTimers(let book, let save):
            followUps += saveTimers(book, save)
        case .tell(let activity):
            tell(activity)
        case .soundOn: soundOn()
        case .armTimerAlarm(let after): arm(timerAlarm, after)
        case .armTimerTick(let after): arm(timerTick, after)
        case .armTimersSaveRetry(let after): arm(timersSaveRetry, after)
        case .armScreenIdle(let after): arm(screenIdle, after)
        case .armNetworkCheck(let after): arm(networkCheck, after)
        case .setScreen(let percent, let backlight):
            setScreen(percent: percent, backlight: backlight)
        case .final(let transcript, let answer, let houndifyVoice, let done, let onDevice):
            tellFinal(transcript: transcript, answer: answer, houndifyVoice: houndifyVoice, done: done, onDevice: onDevice)
        case .finalWithNextWords(let transcript, let done, let onDevice):
            pendingFinal = (transcript, done, onDevice)
        case .enrollmentAnswer(let answer): answerEnrollment(answer)
        case .startEnrolling(let id): router.startEnrolling(id)
        case .sayForEnrollment(let words, let id): sayForEnrollment(words, id: id, in: &group)
        case .startTake(let id):
            take = nil
            router.startTake(id: id)
        case .stopTake: router.stopTake()
        case .checkTake(let id, let phrase): checkTake(id: id, phrase: phrase)
        case .saveTakes(let id, let phrase): saveTakes(id: id, phrase: phrase)
        case .discardTakes:
            take = nil
            ports.enrollment?.discard()
        case .endEnrolling(let id): router.endEnrolling(id)
        case .startSearch(let preRoll, let openMicrophone, let held):
            if let failed = startSearch(preRoll: preRoll, openMicrophone: openMicrophone, held: held, in: &group) {
                reports.append(failed)
            }
        case .openAlwaysOnMicrophone:
            if alwaysOnMicrophone == nil { openAlwaysOnMicrophone() }
        case .startTextSearch(let query, let id):
            if let failed = startTextSearch(query, id: id, in: &group) { reports.append(failed) }
        case .refuseQuestion(let id, let query, let reason):
            tell(.question(.init(id: id, query: query, .refused(reason))))
        case .stopRecording:
            stopRecording()
        case .clearConversation:
            ports.search.clearConversation()
            logger.info("conversation cleared: the next question starts anew")
        case .endAudio:
            stopRecording()
            search?.finish()
        case .cancelSearch: cancelSearch()
        case .speak(let utterance, let id): speak(utterance, id: id, in: &group)
        case .stopSpeaking:
            ports.speech.stopSpeaking()
        case .playEarcon(let earcon, let id):
            let playback = ports.speech.play(earcon)
            group.addTask { [continuation] in
                let (end, problem) = await playback.ended()
                continuation.yield(.played(.soundEnded(end, id: id), problem: problem))
            }
        case .leds(let leds):
            ports.board?.show(leds)
            tell(.leds(leds))
        case .runCommand(let command): runCommand(command)
        case .volume(let action):
            followUps += step(core: .volumeChanged(action, changeVolume(action)))
        case .setMicrophoneMuted(let on):
            setMicrophoneMuted(on)
        case .armWatchdog(let generation, let ms): armWatchdog(generation: generation, ms: ms)
        case .disarmWatchdog:
            replaceWatchdog(with: nil)
        case .stateChanged(let from, let to):
            stateChanged(from: from, to: to)
        case .show(let utterance):
            let words = render(utterance)
            tellPendingFinal(words)
            tell(.answerShown(words))
        case .stopped:
            shutDown(in: &group)
            return true
        case .keepFalseWake:
            ports.hotPhrase?.keepFalseWake()
        case .holdAnsweredWake:
            ports.hotPhrase?.holdAnsweredWake()
        case .answeredWake:
            ports.hotPhrase?.keepAnsweredWake()
        }
        return false
    }

    /// A timer or alarm is due: it must be heard, so a sound switched off by voice comes back on.
    private mutating func soundOn() {
        guard ports.volume.soundOff else { return }
        do throws(DeviceProblem) {
            try ports.volume.setSoundOff(false)
            tell(.volume(ports.volume.percent, soundOff: false))
        } catch { tell(.deviceProblem(error)) }
    }

    /// The search under way is dropped: nothing more of it is heard or sent, and whoever typed it is told why.
    private mutating func cancelSearch() {
        router.detach()
        search?.cancel()
        questionMicrophone?.stop()
        questionMicrophone = nil
        searchID += 1
        if let question = question.take() {
            tell(.question(.init(id: question.id, query: question.query, .dropped(speaker.dropReason))))
        }
        finishInteraction()
    }

    private mutating func speak(_ utterance: Utterance, id: Int, in group: inout DiscardingTaskGroup) {
        // Read on the speech thread as the first sample goes out, and brought to the loop like every input.
        let firstSample: @Sendable () -> Void = { [continuation, clock = ports.clock] in
            continuation.yield(.firstSpeechSample(clock.now))
        }
        // Rendered once: a client action's words are chosen (and its final transcript told) as they are.
        let text = render(utterance)
        tellPendingFinal(text)
        tell(.speech(text))
        let playback: any Playback
        if case .recorded(let audio, _) = utterance {
            playback = ports.speech.playRecording(audio, onFirstSample: firstSample)
        } else {
            playback = ports.speech.speak(text, onFirstSample: firstSample)
        }
        group.addTask { [continuation] in
            let (end, problem) = await playback.ended()
            continuation.yield(.played(.speechEnded(end, id: id), problem: problem))
        }
    }

    /// Starts an owner's command; how it ended is told, not waited for.
    private mutating func runCommand(_ command: String) {
        guard let commands = ports.commands else {
            tell(.deviceProblem(DeviceProblem("command \"\(command)\": this speaker runs no commands")))
            return
        }
        let logger = logger
        commands.run(command) { [continuation] ended in
            switch ended {
            case .success(0): logger.info("command \"\(command)\" done")
            case .success(let status):
                continuation.yield(.tell(.deviceProblem(DeviceProblem("command \"\(command)\" failed with exit status \(status)"))))
            case .failure(let problem): continuation.yield(.tell(.deviceProblem(problem)))
            }
        }
    }

    /// A timer for this arming, carrying its generation: one that fires just as the state changes brings the old
    /// generation, which the core finds stale (the machine owns the generation; the loop keeps no copy).
    private mutating func armWatchdog(generation: Int, ms: Int) {
        let timer = ports.clock.makeTimer { [continuation] in continuation.yield(.event(.watchdog(generation: generation))) }
        timer.schedule(after: .milliseconds(ms))
        replaceWatchdog(with: timer)
    }

    /// The watchdog armed now becomes `timer` (nil: none); the one before will not fire.
    private mutating func replaceWatchdog(with timer: (any LoopTimer)?) {
        watchdog?.disarm()
        watchdog = timer
    }

    /// Starts a search (voice or text) as the one under way: its events come to the loop under a new id, so those
    /// of any earlier search are ignored. Failure: it could not start (told), for the machine to hear.
    private mutating func begin(_ kind: String, in group: inout DiscardingTaskGroup,
                       _ start: () throws(SearchError) -> any VoiceSearchSession) -> Result<(any VoiceSearchSession, Int), SearchError> {
        let search: any VoiceSearchSession
        do throws(SearchError) { search = try start() } catch {
            var failure = SearchError(error.failure, detail: "cannot start a \(kind) search: \(error.detail)", code: error.code)
            failure.offlineCommands = settings.machine.offlineCommands
            tell(.searchFailed(failure))
            questionFailed(failure)
            return .failure(error)
        }
        searchID += 1
        self.search = search
        timings = InteractionTimings(trigger: ports.clock.now)
        let id = searchID
        group.addTask { [continuation] in
            for await event in search.events { continuation.yield(.search(id: id, event)) }
        }
        return .success((search, id))
    }

    /// Nil: started; else why not, for the machine (`.searchFailed`). `id`: the asker's number (0: nobody waits).
    private mutating func startTextSearch(_ query: String, id: Int, in group: inout DiscardingTaskGroup) -> SpeakerEvent? {
        if id != 0 {
            question = (id, query)
            tell(.question(.init(id: id, query: query, .asked)))
        }
        if case .failure(let error) = begin("text", in: &group, { [search = ports.search] () throws(SearchError) in try search.startTextSearch(query) }) {
            return .searchFailed(error.failure, said: error.spoken)
        }
        return nil
    }

    /// Nil: started, its audio on the way; else why not, for the machine (`.searchFailed`).
    private mutating func startSearch(preRoll: Bool, openMicrophone: Bool, held: Bool, in group: inout DiscardingTaskGroup) -> SpeakerEvent? {
        let search: any VoiceSearchSession, id: Int
        let start = { [search = ports.search] () throws(SearchError) in
            try search.startVoiceSearch(afterHotPhrase: preRoll, endsAtSafeToStop: !held)
        }
        switch begin("voice", in: &group, start) {
        case .success(let started): (search, id) = started
        case .failure(let error): return .searchFailed(error.failure, said: error.spoken)
        }
        router.attach(search, id: id, endpointer: Endpointer(settings: settings.endpointer, frameMS: ports.microphone.frameMS),
                      preRoll: preRoll)
        guard openMicrophone else { return nil }  // the always-on microphone feeds the router
        do throws(DeviceProblem) {
            questionMicrophone = try self.openMicrophone(waitForDevice: false)
            return nil
        } catch {
            return .searchFailed(microphoneFailed(search, error))
        }
    }

    /// The search started has nothing to record: it is cancelled, and the failure told, for the machine to hear.
    private mutating func microphoneFailed(_ search: any VoiceSearchSession, _ problem: DeviceProblem) -> SearchFailure {
        search.cancel()
        let error = SearchError.notReady(problem.message)
        tell(.searchFailed(error))
        return .microphone
    }

    /// The hot phrase's microphone stays open for good; one that is missing at start is looked for every second
    /// (as a lost one is), so a microphone plugged in after boot is heard without a restart.
    private mutating func openAlwaysOnMicrophone() {
        do throws(DeviceProblem) {
            alwaysOnMicrophone = try openMicrophone(waitForDevice: true)
        } catch {
            tell(.deviceProblem(DeviceProblem("\(error.message); the hot phrase cannot be heard")))
        }
    }

    /// Opens and starts the microphone, every frame going to the router and its events to the loop.
    private func openMicrophone(waitForDevice: Bool) throws(DeviceProblem) -> any MicrophoneStream {
        let router = self.router
        return try ports.microphone.open(waitForDevice: waitForDevice,
                                         onEvent: { [continuation] event in continuation.yield(.microphone(event)) },
                                         onFrame: { frame in router.frame(frame) })
    }

    private func render(_ utterance: Utterance) -> String {
        switch utterance {
        case .text(let text): return text
        case .recorded(_, let text): return text
        case .ipAddress: return Speaker.ipAddressSentence(ports.system.ipAddresses())
        case .time: return Speaker.timeSentence(speakerNow())
        case .date: return Speaker.dateSentence(speakerNow())
        case .actionOutcome(let responses):
            let (text, kept) = speaker.actionReply(responses)
            if let kept { ports.search.keepConversation(kept) }
            return text
        }
    }

    /// Carries out a volume command on the output: its level after, or why it could not be changed.
    private func changeVolume(_ action: VolumeAction) -> Result<VolumeLevel, DeviceProblem> {
        let volume = ports.volume
        do throws(DeviceProblem) {
            switch action {
            case .step(let up): _ = try volume.step(up: up)
            // Clamped before adding: the step comes from outside, and Int.max points would overflow the sum.
            case .by(let points): _ = try volume.set(volume.percent + min(max(points, -100), 100))
            case .to(let percent): _ = try volume.set(percent)
            case .mute(let off): try volume.setSoundOff(off)
            }
        } catch { return .failure(error) }
        return .success(VolumeLevel(percent: volume.percent, soundOff: volume.soundOff))
    }

    /// Mute releases the always-on microphone (the device is closed, not just ignored).
    private mutating func setMicrophoneMuted(_ on: Bool) {
        tell(.muted(on))
        if on {
            alwaysOnMicrophone?.stop()
            alwaysOnMicrophone = nil  // and the core has the microphone down; unmuted, it asks for it again
        }
        if let store = ports.muteStore {
            // The state here stays as asked either way; the store's problem says what a restart would do.
            do throws(DeviceProblem) { try store.save(on) } catch { tell(.deviceProblem(error)) }
        }
    }

    // MARK: Timers

    /// The speaker is up: what reading the saved state found is told, saved and armed, and what fell due rings.
    /// True when the loop must end.
    private mutating func started(_ startup: SpeakerLoop.Startup, in group: inout DiscardingTaskGroup) -> Bool {
        if startup.muted { tell(.muted(true)) }
        for problem in startup.timerProblems { tell(.deviceProblem(problem)) }
        return step(.timersRestored(changes: startup.changes, alarms: startup.alarms, ringing: startup.ringing), in: &group)
    }

    /// Saves the timers and alarms as the core asked (`.saveTimers`), and hands it the result: what the core
    /// makes of it (the problem told once, the retry armed, the caveat) comes back to be carried out.
    private mutating func saveTimers(_ book: TimerBook, _ save: Speaker.TimersSave) -> [Speaker.Effect] {
        guard let store = ports.timerStore else { return [] }
        let problem: DeviceProblem?
        do throws(DeviceProblem) {
            try store.save(book, at: ports.clock.reading)
            problem = nil
        } catch { problem = error }
        if let problem, speaker.timersSaveProblem != nil {
            logger.debug("timers: still cannot be saved: \(problem.message)")
        }
        return step(core: .timersSaved(problem, save))
    }

    private mutating func stateChanged(from: SpeakerState, to: SpeakerState) {
        loop.stateLog.withLock { log in
            log.append(to)
            if log.count > SpeakerLoop.historyLimit { log.removeFirst(log.count - SpeakerLoop.historyLimit) }
        }
        tell(.stateChanged(from: from, to: to))
        if to == .ready || to == .none {
            if from == .speaking { mark(\.speechEnd) }
            finishInteraction()
        }
        if to == .recording {
            // A follow-up (AutoListen) starts its own interaction.
            if timings?.finalResult != nil { timings = InteractionTimings(trigger: ports.clock.now) }
        }
    }

    private mutating func finishInteraction() {
        // An answer's words that never came (a long press over it) are not told with the next one's.
        pendingFinal = nil
        guard var finished = timings else { return }
        finished.firstAudioSent = search?.firstAudioSent
        timings = nil
        search = nil
        // Only the recent past is kept: a speaker runs for months.
        loop.history.withLock { h in
            h.append(finished)
            if h.count > SpeakerLoop.historyLimit { h.removeFirst(h.count - SpeakerLoop.historyLimit) }
        }
        tell(.timings(finished))
    }

    private mutating func shutDown(in group: inout DiscardingTaskGroup) {
        router.detach()
        replaceWatchdog(with: nil)
        pulse.disarm()
        timerAlarm.disarm()
        timerTick.disarm()
        // The time left as it is now, for a reboot (a clean stop: `reboot`, an upgrade): not the last minute's.
        let book = speaker.timers
        if book.anyRunning { _ = perform(saveTimers(book, Speaker.TimersSave()), in: &group) }
        timersSaveRetry.disarm()
        search?.cancel()
        search = nil
        questionMicrophone?.stop()
        questionMicrophone = nil
        alwaysOnMicrophone?.stop()
        alwaysOnMicrophone = nil
        ports.speech.stopSpeaking()
        ports.board?.stop()
        continuation.finish()
    }
}
