public import Audio
public import AudioCore
public import BoardCore
public import Board
import FoundationEssentials
import Platform
import Glibc
public import Houndify
public import Logging
public import Speaker
public import Speech
import Synchronization

/// Everything the loop drives. Each part is the real thing; only the board may be simulated.
public struct SpeakerParts: Sendable {
    public var client: HoundifyClient
    public var speech: SpeechEngine
    public var output: SpeechOutput
    public var earcons: [Earcon: MonoAudio]
    public var volume: OutputVolume
    public var capture: CaptureSettings
    public var endpointer: Endpointer.Settings
    public var machine: SpeakerMachine.Settings
    public var board: BoardRunner?
    public var hotPhrase: (any HotPhraseDetecting)?
    /// Audio kept from before a hot phrase, for the query.
    public var preRollMS = 300
    /// Extra RequestInfo for voice queries (e.g. what the local service should pretend to hear).
    public var voiceRequestInfo: [String: JSONValue] = [:]
    /// Run on every state change with HOUND_SPEAKER_STATE and HOUND_SPEAKER_PREVIOUS_STATE set ("" = none).
    public var stateHook = ""
    /// Each event as one JSON object (`run --events json`).
    public var eventSink: (@Sendable (String) -> Void)?
    /// Beats from inside the loop for a service manager's watchdog (nil: none).
    public var heartbeat: LoopHeartbeat?
    public var logger: Logger

    public init(client: HoundifyClient, speech: SpeechEngine, output: SpeechOutput, earcons: [Earcon: MonoAudio],
                volume: OutputVolume, capture: CaptureSettings, endpointer: Endpointer.Settings = .init(),
                machine: SpeakerMachine.Settings = .init(), board: BoardRunner? = nil, logger: Logger) {
        self.client = client
        self.speech = speech
        self.output = output
        self.earcons = earcons
        self.volume = volume
        self.capture = capture
        self.endpointer = endpointer
        self.machine = machine
        self.board = board
        self.logger = logger
    }
}

/// Stage times of one interaction, logged as one line when it ends.
public struct InteractionTimings: Sendable, Equatable {
    public var trigger: ContinuousClock.Instant
    public var firstAudioSent: ContinuousClock.Instant?
    public var endOfSpeech: ContinuousClock.Instant?
    public var firstPartial: ContinuousClock.Instant?
    public var finalResult: ContinuousClock.Instant?
    public var firstTTSSample: ContinuousClock.Instant?
    public var speechEnd: ContinuousClock.Instant?

    /// `trigger->audio 12 ms, ->end of speech 1830 ms, ...` in milliseconds from the trigger.
    public var line: String {
        func ms(_ i: ContinuousClock.Instant?) -> String {
            i.map { String(Int(trigger.duration(to: $0) / .milliseconds(1))) } ?? "-"
        }
        return "timings (ms from trigger): first audio sent \(ms(firstAudioSent)), end of speech \(ms(endOfSpeech)), "
            + "first partial \(ms(firstPartial)), final result \(ms(finalResult)), first TTS sample \(ms(firstTTSSample)), "
            + "speech end \(ms(speechEnd))"
    }

    public func milliseconds(_ keyPath: KeyPath<InteractionTimings, ContinuousClock.Instant?>) -> Int? {
        self[keyPath: keyPath].map { Int(trigger.duration(to: $0) / .milliseconds(1)) }
    }
}

/// The speaker: one loop consuming every event (button, endpointer, Houndify, speech, watchdog) in order,
/// handing it to the state machine and carrying out the effects. Blocking C work stays on the threads the
/// parts own (capture, curl, speech, board); the loop only decides.
public final class SpeakerLoop: Sendable {
    private let parts: SpeakerParts
    private let inputs: AsyncStream<LoopInput>
    private let continuation: AsyncStream<LoopInput>.Continuation
    private let router: CaptureRouter
    private let watchdog: Watchdog
    private let state: Mutex<LoopState>
    private let history = Mutex<[InteractionTimings]>([])
    /// Whether the always-on microphone (hot phrase) is delivering audio; set from its capture thread's events.
    private let microphoneUp = Mutex(false)
    private let stateLog = Mutex<[SpeakerState]>([])

    /// How many interactions and states are remembered.
    public static let historyLimit = 1000

    /// The last completed interactions' timings, oldest first (for the benchmark and tests).
    public var interactions: [InteractionTimings] { history.withLock { $0 } }
    /// Every state entered, in order (for tests and `demo`).
    public var statesEntered: [SpeakerState] { stateLog.withLock { $0 } }

    struct LoopState {
        var machine: SpeakerMachine
        var search: VoiceSearch?
        var searchID = 0
        var capture: ALSACapture?
        var speech: SpeechTask?
        var timings: InteractionTimings?
        var continuousCapture: ALSACapture?
    }

    public init(parts: SpeakerParts) {
        self.parts = parts
        (inputs, continuation) = AsyncStream.makeStream(of: LoopInput.self, bufferingPolicy: .unbounded)
        let continuation = self.continuation
        router = CaptureRouter(preRollMS: parts.preRollMS, detector: parts.hotPhrase, post: { continuation.yield($0) })
        watchdog = Watchdog { generation in continuation.yield(.event(.watchdog(generation: generation))) }
        state = Mutex(LoopState(machine: SpeakerMachine(settings: parts.machine)))
        // First in the queue, whatever is sent before run() starts: a press that early must find the speaker ready,
        // not be dropped in state none.
        continuation.yield(.event(.started))
    }

    /// Feeds an event from outside (a test, the demo's script, a signal handler's shutdown).
    public func send(_ event: SpeakerEvent) { continuation.yield(.event(event)) }

    private let extraRequestInfo = Mutex<[String: JSONValue]>([:])

    /// RequestInfo added to the next voice queries (over `parts.voiceRequestInfo`).
    public func setVoiceRequestInfo(_ info: [String: JSONValue]) { extraRequestInfo.withLock { $0 = info } }

    /// The current state.
    public var currentState: SpeakerState { state.withLock { $0.machine.state } }

    /// Runs until `.shutdown` has been handled: LEDs off, devices closed, conversation state saved (the client
    /// saves it with every answer).
    public func run() async {
        var boardTask: Task<Void, Never>? = nil
        if let board = parts.board {
            boardTask = Task { [continuation] in
                for await event in board.events {
                    switch event {
                    case .intent(.talk): continuation.yield(.event(.talk))
                    case .intent(.press): continuation.yield(.event(.press))
                    case .intent(.tapEnded): continuation.yield(.event(.tapEnded))
                    case .intent(.endTalk): continuation.yield(.event(.endTalk))
                    case .intent(.cancel): continuation.yield(.event(.cancel))
                    default: break
                    }
                }
            }
        }
        if parts.hotPhrase != nil { startContinuousCapture() }
        let pulse = parts.heartbeat.map { beat in
            HeartbeatTimer(interval: beat.interval) { [continuation] in continuation.yield(.event(.heartbeat)) }
        }
        defer { pulse?.cancel() }
        loop: for await input in inputs {
            let event: SpeakerEvent
            switch input {
            case .event(let e): event = e
            case .endpoint(let id, let decision):
                guard id == state.withLock({ $0.searchID }) else { continue }
                switch decision {
                case .speechStarted: continue
                case .endOfSpeech, .maxLength: event = .endOfSpeech
                case .noSpeech: event = .noSpeech
                }
            case .search(let id, let searchEvent):
                guard id == state.withLock({ $0.searchID }) else { continue }
                guard let mapped = translate(searchEvent) else { continue }
                event = mapped
            }
            if event == .heartbeat {
                pulse?.taken()
                parts.heartbeat?.beat()
                continue
            }
            emitEvent(event)
            let (effects, soundPlaying) = state.withLock { s in (s.machine.handle(event), s.machine.soundPlaying) }
            // The machine alone decides whether our own sound is playing; the router only follows it.
            router.setHotPhraseListening(!soundPlaying)
            for effect in effects {
                if perform(effect) { break loop }
            }
        }
        boardTask?.cancel()
    }

    private func translate(_ event: VoiceSearchEvent) -> SpeakerEvent? {
        switch event {
        case .partialTranscript(let p):
            state.withLock { s in if s.timings?.firstPartial == nil { s.timings?.firstPartial = .now } }
            parts.logger.debug("partial transcript: \(p.partialTranscript)")
            return .partialTranscript(p.partialTranscript)
        case .audioEnded(.safeToStopAudio):
            return .endOfSpeech
        case .audioEnded:
            return nil
        case .result(let response):
            state.withLock { $0.timings?.finalResult = .now }
            let best = response.best
            let transcript = response.transcript ?? ""
            parts.logger.info("final transcript: \"\(transcript)\"")
            return .answer(SpeakerAnswer(transcript: transcript, text: best?.textToSpeak ?? "", autoListen: best?.autoListen ?? false))
        case .failed(let error):
            guard let failure = FailureMapping.failure(for: error) else { return nil }
            parts.logger.warning("search failed: \(error) [\(error.code)]")
            return .searchFailed(failure)
        }
    }

    /// Carries out one effect; returns true when the loop must end.
    private func perform(_ effect: SpeakerEffect) -> Bool {
        switch effect {
        case .startSearch(let preRoll):
            startSearch(preRoll: preRoll)
        case .endAudio:
            router.detach()
            let (search, capture) = state.withLock { s -> (VoiceSearch?, ALSACapture?) in
                if s.timings?.endOfSpeech == nil { s.timings?.endOfSpeech = .now }
                defer { s.capture = nil }
                return (s.search, s.capture)
            }
            search?.finish()
            capture?.stop()
        case .cancelSearch:
            router.detach()
            let (search, capture) = state.withLock { s -> (VoiceSearch?, ALSACapture?) in
                defer { s.search = nil; s.capture = nil; s.searchID += 1 }
                return (s.search, s.capture)
            }
            search?.cancel()
            capture?.stop()
            finishInteraction()
        case .speak(let utterance):
            speak(render(utterance))
        case .stopSpeaking:
            parts.speech.stopSpeaking()
        case .playEarcon(let earcon):
            play(earcon)
        case .leds(let leds):
            parts.board?.show(LEDState(rawValue: leds.rawValue) ?? .ready)
            // For LED daemons on boards this firmware does not drive (and for tests: the error pattern after a
            // speaker that failed is only visible here).
            parts.eventSink?("{\"event\":\"leds\",\"show\":\"\(leds.rawValue)\"}")
        case .changeVolume(let up):
            do throws(AudioDeviceError) {
                let now = up ? try parts.volume.up() : try parts.volume.down()
                parts.logger.info("volume \(now)")
            } catch {
                parts.logger.error("volume: \(error)")
            }
        case .armWatchdog(let generation, let ms):
            watchdog.arm(generation: generation, milliseconds: ms)
        case .disarmWatchdog:
            watchdog.disarm()
        case .stateChanged(let from, let to):
            stateChanged(from: from, to: to)
        case .show(let text):
            parts.logger.notice("answer: \(text)")
            parts.eventSink?("{\"event\":\"answer\",\"text\":\(jsonString(text))}")
        case .log(let message):
            parts.logger.info("\(message)")
        case .stopped:
            shutdownDevices()
            return true
        }
        return false
    }

    private func startSearch(preRoll: Bool) {
        let search: VoiceSearch
        var extra = parts.voiceRequestInfo.merging(extraRequestInfo.withLock { $0 }) { _, new in new }
        if preRoll && extra["WakeUpPattern"] == nil {
            // The pre-roll carries the end of "OK Hound": say so, so Houndify drops the phrase from the query.
            extra["WakeUpPattern"] = .string("[[\"OK\" | \"Okay\"] . \"Hound\"]")
        }
        do throws(HoundifyError) { search = try parts.client.startVoiceSearch(extra: extra) } catch {
            parts.logger.error("cannot start a voice search: \(error)")
            continuation.yield(.event(.searchFailed(FailureMapping.failure(for: error) ?? .serviceFailing)))
            return
        }
        let id = state.withLock { s -> Int in
            s.searchID += 1
            s.search = search
            s.timings = InteractionTimings(trigger: .now)
            return s.searchID
        }
        Task { [continuation] in
            for await event in search.events { continuation.yield(.search(id: id, event)) }
        }
        router.attach(search, id: id, endpointer: Endpointer(settings: parts.endpointer, frameMS: parts.capture.frameMS), preRoll: preRoll)
        if parts.hotPhrase != nil {
            // The always-on microphone feeds the router; if it is missing, say so now rather than record silence.
            if !microphoneUp.withLock({ $0 }) {
                parts.logger.error("microphone \(parts.capture.device) is not available: nothing to record")
                search.cancel()
                continuation.yield(.event(.searchFailed(.microphone)))
            }
            return
        }
        // Without a hot phrase to listen for, the microphone is open only while a question is recorded.
        do throws(AudioDeviceError) {
            let capture = try openMicrophone()
            state.withLock { $0.capture = capture }
        } catch {
            parts.logger.error("microphone: \(error)")
            search.cancel()
            continuation.yield(.event(.searchFailed(.microphone)))
        }
    }

    /// The hot phrase's microphone stays open for good; one that is missing at start is looked for every second
    /// (as a lost one is), so a microphone plugged in after boot is heard without a restart.
    private func startContinuousCapture() {
        do throws(AudioDeviceError) {
            let capture = try openMicrophone(waitForDevice: true)
            state.withLock { $0.continuousCapture = capture }
        } catch {
            parts.logger.error("microphone: \(error); the hot phrase cannot be heard")
        }
    }

    /// Opens and starts the microphone, every frame going to the router.
    private func openMicrophone(waitForDevice: Bool = false) throws(AudioDeviceError) -> ALSACapture {
        let router = self.router
        let capture = try ALSACapture(settings: parts.capture, waitForDevice: waitForDevice, onEvent: { [weak self, logger = parts.logger] event in
            switch event {
            case .opened, .recovered: self?.microphoneUp.withLock { $0 = true }
            case .lost, .stopped: self?.microphoneUp.withLock { $0 = false }
            case .overrun: break
            }
            Self.logCapture(event, logger: logger)
        }, onFrame: { frame, level in router.frame(frame, level: level) })
        capture.start()
        return capture
    }

    static func logCapture(_ event: CaptureEvent, logger: Logger) {
        switch event {
        case .opened(let device, let rate, let channels): logger.debug("microphone \(device) open: \(rate) Hz, \(channels) channel(s)")
        case .overrun: logger.warning("microphone overrun: audio was lost and capture recovered")
        case .lost(let error): logger.error("microphone lost: \(error); looking for it every second (the button says so until it is back)")
        case .recovered: logger.notice("microphone is back")
        case .stopped: break
        }
    }

    private func render(_ utterance: Utterance) -> String {
        switch utterance {
        case .text(let text): text
        case .volume: "Volume \(parts.volume.current)."
        case .ipAddress: IPAddress.sentence()
        }
    }

    private func speak(_ text: String) {
        let task = parts.speech.speak(text, to: parts.output, onFirstSample: { [weak self] in
            self?.state.withLock { s in if s.timings?.firstTTSSample == nil { s.timings?.firstTTSSample = .now } }
        })
        state.withLock { $0.speech = task }
        Task { [continuation] in
            let result = await task.result()
            let interrupted = (try? result.get().outcome) != .finished
            if case .failure(let error) = result {
                self.parts.logger.error("speech: \(error)")
                if error.isOutputDevice { continuation.yield(.event(.outputFailed)) }
            }
            continuation.yield(.event(.speechEnded(interrupted: interrupted)))
        }
    }

    private func play(_ earcon: SpeakerEarcon) {
        let name: Earcon = switch earcon {
        case .startListening: .startListening
        case .stopListening: .stopListening
        case .cancel: .cancel
        case .error: .error
        }
        guard let sound = parts.earcons[name] else {
            continuation.yield(.event(.soundEnded))
            return
        }
        let task = parts.speech.play(sound, to: parts.output)
        Task { [continuation] in
            if case .failure(let error) = await task.result() {
                self.parts.logger.error("earcon: \(error)")
                if error.isOutputDevice { continuation.yield(.event(.outputFailed)) }
            }
            continuation.yield(.event(.soundEnded))
        }
    }

    private func stateChanged(from: SpeakerState, to: SpeakerState) {
        parts.logger.info("state \(from.rawValue) -> \(to.rawValue)")
        stateLog.withLock { log in
            log.append(to)
            if log.count > SpeakerLoop.historyLimit { log.removeFirst(log.count - SpeakerLoop.historyLimit) }
        }
        parts.eventSink?("{\"event\":\"state\",\"from\":\"\(from.rawValue)\",\"to\":\"\(to.rawValue)\"}")
        if to == .ready || to == .none {
            if from == .speaking { state.withLock { s in if s.timings?.speechEnd == nil { s.timings?.speechEnd = .now } } }
            finishInteraction()
        }
        if to == .recording {
            // A follow-up (AutoListen) starts its own interaction.
            state.withLock { s in if s.timings?.finalResult != nil { s.timings = InteractionTimings(trigger: .now) } }
        }
        if !parts.stateHook.isEmpty { StateHook.run(parts.stateHook, state: to.rawValue, previous: from.rawValue, logger: parts.logger) }
    }

    private func finishInteraction() {
        let finished = state.withLock { s -> InteractionTimings? in
            guard var t = s.timings else { return nil }
            if let search = s.search {
                t.firstAudioSent = search.timings.firstAudio
                if t.firstPartial == nil { t.firstPartial = search.timings.firstPartial }
            }
            s.timings = nil
            s.search = nil
            return t
        }
        guard let finished else { return }
        // Only the recent past is kept: a speaker runs for months.
        history.withLock { h in
            h.append(finished)
            if h.count > SpeakerLoop.historyLimit { h.removeFirst(h.count - SpeakerLoop.historyLimit) }
        }
        parts.logger.notice("\(finished.line)")
        parts.eventSink?("{\"event\":\"timings\",\"line\":\(jsonString(finished.line))}")
    }

    private func emitEvent(_ event: SpeakerEvent) {
        guard let sink = parts.eventSink else { return }
        switch event {
        case .partialTranscript(let text): sink("{\"event\":\"partial\",\"text\":\(jsonString(text))}")
        case .answer(let answer): sink("{\"event\":\"final\",\"transcript\":\(jsonString(answer.transcript)),\"answer\":\(jsonString(answer.text))}")
        case .searchFailed(let failure): sink("{\"event\":\"error\",\"kind\":\"\(failure.rawValue)\"}")
        case .talk, .endTalk, .cancel: sink("{\"event\":\"button\",\"action\":\"\(event)\"}")
        // A tap-to-talk press does what "talk" does (scripts read it so); its end is "release".
        case .press: sink("{\"event\":\"button\",\"action\":\"talk\"}")
        case .tapEnded: sink("{\"event\":\"button\",\"action\":\"release\"}")
        case .hotPhrase: sink("{\"event\":\"hotphrase\"}")
        default: break
        }
    }

    private func shutdownDevices() {
        router.detach()
        let (capture, continuous, search) = state.withLock { s -> (ALSACapture?, ALSACapture?, VoiceSearch?) in
            defer { s.capture = nil; s.continuousCapture = nil; s.search = nil }
            return (s.capture, s.continuousCapture, s.search)
        }
        watchdog.disarm()
        search?.cancel()
        capture?.stop()
        continuous?.stop()
        parts.speech.stopSpeaking()
        parts.board?.stop()
        continuation.finish()
    }
}

func jsonString(_ text: String) -> String { JSONValue.string(text).asciiJSON() }

/// The optional command run on each state change (as wyoming-satellite's hooks): `/bin/sh -c COMMAND` with the
/// states in its environment, not waited for by the loop, so a slow hook cannot stall the speaker; an owned
/// thread reaps it so no zombie is left.
enum StateHook {
    static func run(_ command: String, state: String, previous: String, logger: Logger) {
        var environment = ProcessInfo.processInfo.environment
        // The key is the speaker's secret: no hook (a script of anyone's) gets it.
        environment["HOUNDIFY_CLIENT_KEY"] = nil
        environment["HOUND_SPEAKER_STATE"] = state
        environment["HOUND_SPEAKER_PREVIOUS_STATE"] = previous
        let shell: [String] = ["/bin/sh", "-c", command]
        let arguments: [UnsafeMutablePointer<CChar>?] = shell.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (arguments + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, "/bin/sh", nil, nil, arguments, envp)
        guard status == 0 else {
            logger.warning("state hook \"\(command)\": cannot start /bin/sh: \(String(cString: strerror(status)))")
            return
        }
        let child = pid
        OwnedThread.start(name: "hs-hook") {
            var result: Int32 = 0
            while waitpid(child, &result, 0) < 0 && errno == EINTR {}
        }
    }
}

/// "What's your IP address": the addresses of the up, non-loopback interfaces.
enum IPAddress {
    static func sentence() -> String {
        let addresses = current()
        guard !addresses.isEmpty else { return "I don't have a network address." }
        let spoken = addresses.prefix(2).map { $0.replacing(".", with: " dot ") }
        return "My IP address is \(spoken.joined(separator: ", and "))."
    }

    static func current() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var out: [String] = []
        var item: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = item {
            defer { item = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == UInt16(AF_INET),
                  entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(address, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 {
                out.append(String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return out
    }
}
