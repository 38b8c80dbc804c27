import Foundation
import JSONKit
import AudioCore
import Logging
import Synchronization
import Testing
@testable import Audio
@testable import Houndify
import HotPhrase
@testable import LocalHoundify
@testable import SpeakerCore
@testable import SpeakerRuntime
import Assembly
import OfflineRecognition
import HoundifyAnswers
@testable import Speech
import TestSupport

let clientID = "AAECAwQFBgcICQoLDA0ODw=="
let clientKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="
let earconDirectory = repositoryRoot + "/share/earcons"

/// Collects the loop's events (its JSON event lines) and lets a test wait for one, with a deadline. Waiting
/// suspends: it must not block a thread of the concurrency pool, on which the loop itself runs.
final class EventLog: Sendable {
    private let state = Mutex<(lines: [String], waiters: [(text: String, skip: Int, waiter: CheckedContinuation<Bool, Never>)])>(([], []))
    /// Runs on the loop, synchronously, for each line: lets a test act at an exact point of the interaction.
    let react = Mutex<(@Sendable (String) -> Void)?>(nil)

    func add(_ line: String) {
        let due = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            s.lines.append(line)
            let count = s.lines.count
            let ready = s.waiters.filter { w in s.lines.dropFirst(w.skip).contains { $0.contains(w.text) } && count > w.skip }
            s.waiters.removeAll { w in s.lines.dropFirst(w.skip).contains { $0.contains(w.text) } }
            return ready.map(\.waiter)
        }
        react.withLock { $0 }?(line)
        for w in due { w.resume(returning: true) }
    }

    var all: [String] { state.withLock { $0.lines } }

    /// Waits until a line containing `text` has arrived (after the first `skip` lines), or `seconds` pass.
    func wait(for text: String, after skip: Int = 0, seconds: Double = 20) async -> Bool {
        let timeout = Task {
            // Cancelled (the line came): it must not expire a later wait for the same text.
            guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }
            self.expire(text)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { waiter in
            let now = state.withLock { s -> Bool in
                if s.lines.dropFirst(skip).contains(where: { $0.contains(text) }) { return true }
                s.waiters.append((text, skip, waiter))
                return false
            }
            if now { waiter.resume(returning: true) }
        }
    }

    private func expire(_ text: String) {
        let due = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            let matching = s.waiters.filter { $0.text == text }.map(\.waiter)
            s.waiters.removeAll { $0.text == text }
            return matching
        }
        for w in due { w.resume(returning: false) }
    }

    var states: [String] {
        all.compactMap { line in
            guard line.contains("\"event\":\"state\""), let r = line.range(of: "\"to\":\"") else { return nil }
            return String(line[r.upperBound...].prefix { $0 != "\"" })
        }
    }
}

/// One speaker, whole: the local Houndify service on 127.0.0.1, real libcurl, real ALSA (file PCMs), real espeak-ng,
/// through the same adapters `run` uses; the events are the `--events json` lines. The loop's behaviour is tested on
/// fakes (LoopBehaviourTests); these check that the real parts fit.
struct Rig {
    let service: LocalHoundifyService?
    let loop: SpeakerLoop
    let search: HoundifyVoiceSearch
    let events: EventLog
    let task: Task<Void, Never>
    /// The speaker's output read at twice real time (`start(pacedSpeaker: true)`), nil: written at once to its file.
    var sink: PacedSink? = nil
    /// With `serviceUp: false`, the port the client is refused on, held so that no other test's service is given it.
    var held: HeldPort? = nil

    /// `question` is spoken by espeak-ng (or with `fliteQuestion` by flite) into the microphone fixture, between silences.
    static func start(question: String = "what time is it", transcript: String = "what time is it",
                      fault: LocalServiceConfiguration.Fault = .none, key: String = clientKey, serviceUp: Bool = true,
                      responseTimeoutMS: Int = 10_000, searchingLimitMS: Int = 20_000, hotPhrase: Bool = false,
                      stateHook: String = "", microphone: String = "test_loop_mic", microphonePresent: Bool = true,
                      speaker: String = "test_loop_speaker", pacedSpeaker: Bool = false,
                      pacedMicrophone: Bool = false, holdSecondSpeech: Bool = false, offlineCommands: Bool = false,
                      fliteQuestion: Bool = false) async throws -> Rig {
        _ = TestALSA.directory
        setenv("HOUND_SPEAKER_EARCON_PATH", earconDirectory, 1)
        // The microphone: 0.3 s of silence, the question, 2 s of silence (the null PCM gives silence after it).
        let wav = FileManager.default.temporaryDirectory.appendingPathComponent("hs-loop-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: wav) }
        if !microphonePresent {
            try? FileManager.default.removeItem(atPath: TestALSA.inputFile(microphone))  // its file PCM cannot open
        } else if hotPhrase {
            // Room tone, "OK Hound", the question: the microphone plays it in real time from the start.
            try writeHotPhraseQuestion(to: microphone)
        } else {
            if fliteQuestion { try fliteWAV(question, to: wav) } else { try espeakWAV(question, to: wav) }
            try runSox([wav, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", TestALSA.inputFile(microphone), "pad", "0.3", "2"])
        }
        try? FileManager.default.removeItem(atPath: TestALSA.outputFile(speaker))
        // espeak-ng's 22,050 Hz mono 16-bit, read at twice real time.
        let sink = pacedSpeaker ? try PacedSink(path: TestALSA.outputFile(speaker), bytesPerSecond: 2 * 2 * 22_050) : nil

        var service: LocalHoundifyService? = nil
        let port: Int
        var held: HeldPort? = nil
        if serviceUp {
            var settings = LocalServiceConfiguration(clientID: clientID, clientKey: clientKey, defaultTranscript: transcript)
            settings.fault = fault
            let s = try LocalHoundifyService(configuration: settings)
            port = try await s.start(port: 0)
            service = s
        } else {
            // A port nothing listens on. Released, the kernel could give it to a test running beside this one.
            let h = try HeldPort()
            port = h.port
            held = h
        }
        let profile = ClientProfile(clientID: clientID, userID: "test", deviceID: "rig", timeZone: "UTC")
        let client = try HoundifyClient(configuration: HoundifyClientConfiguration(
            endpoint: "http://127.0.0.1:\(port)", clientKey: key, profile: profile, connectTimeoutMS: 2000,
            responseTimeoutMS: responseTimeoutMS))
        var capture = CaptureSettings(device: microphone)
        capture.rate = 16000
        let events = EventLog()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var detector: HotPhraseListener? = nil
        if hotPhrase {
            detector = HotPhraseListener(model: try HotPhraseModel.load(path: repositoryRoot + "/share/hotphrase/ok-hound.hpm"), settings: HotPhraseSettings())
            capture.pacing = .realTime
        } else {
            // The question at once, unless the test is about how long a question lasts.
            capture.pacing = pacedMicrophone ? .realTime : .none
        }
        let search = HoundifyVoiceSearch(client: client)
        let engine = EngineSpeech(engine: try SpeechEngine(settings: VoiceSettings()), output: .device(speaker), earcons: try Earcons.load())
        let speech: any SpeechOutputPort = holdSecondSpeech
            ? WatchedSpeech(inner: engine, events: events, atSecondSpeech: { [sink] in sink?.hold() }) : engine
        let questions: any VoiceSearchService = offlineCommands ? OfflineFallbackSearch(inner: search) : search
        let ports = SpeakerPorts(search: questions, speech: speech,
                                 volume: MixerVolume(try OutputVolume(percent: 100, device: speaker, mixerControl: "")),
                                 microphone: ALSAMicrophone(capture), hotPhrase: detector, clock: DispatchClock(), system: HostSystem())
        var settings = SpeakerLoopSettings()
        settings.machine.searchingLimitMS = searchingLimitMS
        settings.machine.offlineCommands = offlineCommands
        var observers: [@Sendable (SpeakerActivity) -> Void] = [{ events.add($0.json) }]
        if let hook = StateHook.observer(stateHook, logger: logger) { observers.append(hook) }
        let loop = SpeakerLoop(ports: ports, settings: settings, logger: logger, observers: observers)
        let task = Task.detached { await loop.run() }
        #expect(await events.wait(for: "\"to\":\"ready\""))
        return Rig(service: service, loop: loop, search: search, events: events, task: task, sink: sink, held: held)
    }

    /// "OK Hound, what time is it" (the demo's recording) as the raw file a test capture PCM reads.
    static func writeHotPhraseQuestion(to microphone: String) throws {
        try runSox([repositoryRoot + "/share/demo/ok-hound-what-time-is-it.wav", "-t", "raw", TestALSA.inputFile(microphone), "pad", "0", "2"])
    }

    func stop() async {
        sink?.release()
        loop.send(.shutdown)
        await task.value
        await service?.stop()
        sink?.stop()
    }

    /// What the speaker played (speech and earcons), as 16-bit samples.
    var played: [Int16] { sink?.samples ?? (try? readRawInt16(TestALSA.outputFile("test_loop_speaker"))) ?? [] }
}

/// The rig's speech, each utterance's end written to the event log (`{"test":"speech 1 ended interrupted"}`), and
/// `atSecondSpeech` run as the second utterance's first sample goes out.
final class WatchedSpeech: SpeechOutputPort {
    let inner: EngineSpeech
    let events: EventLog
    let atSecondSpeech: @Sendable () -> Void
    private let count = Mutex(0)

    init(inner: EngineSpeech, events: EventLog, atSecondSpeech: @escaping @Sendable () -> Void) {
        self.inner = inner
        self.events = events
        self.atSecondSpeech = atSecondSpeech
    }

    struct Watched: Playback {
        let inner: any Playback
        let number: Int
        let events: EventLog
        func ended() async -> (end: SoundEnd, problem: String?) {
            let result = await inner.ended()
            events.add("{\"test\":\"speech \(number) ended \(result.end)\"}")
            return result
        }
    }

    func speak(_ text: String, onFirstSample: @escaping @Sendable () -> Void) -> any Playback {
        let number = count.withLock { $0 += 1; return $0 }
        let hook = atSecondSpeech
        let playback = inner.speak(text) {
            if number == 2 { hook() }
            onFirstSample()
        }
        return Watched(inner: playback, number: number, events: events)
    }

    func play(_ earcon: Earcon) -> any Playback { inner.play(earcon) }
    func playRecording(_ audio: MonoAudio, onFirstSample: @escaping @Sendable () -> Void) -> any Playback {
        inner.playRecording(audio, onFirstSample: onFirstSample)
    }
    func stopSpeaking() { inner.stopSpeaking() }
}

@Suite(.serialized) struct SpeakerLoopTests {
    @Test func buttonQueryIsAnsweredAndSpoken() async throws {
        let rig = try await Rig.start()
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"event\":\"final\""))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        #expect(rig.events.states == ["ready", "recording", "searching", "speaking", "ready", "none"])
        #expect(rig.events.all.contains { $0.contains("\"transcript\":\"what time is it\"") && $0.contains("\"answer\":\"It is ") })
        // Speech reached the speaker: well over a second of audible audio (earcons are a fraction of that).
        let played = rig.played
        #expect(played.count > 22050)
        #expect(AudioLevel.dBFS(played) > -40)
        let timings = try #require(rig.loop.interactions.first)
        for stage: KeyPath<InteractionTimings, ContinuousClock.Instant?> in [\.firstAudioSent, \.endOfSpeech, \.finalResult, \.firstTTSSample, \.speechEnd] {
            #expect(timings.milliseconds(stage) != nil, "missing stage \(stage)")
        }
        #expect(timings.milliseconds(\.finalResult)! <= timings.milliseconds(\.firstTTSSample)!)
    }

    /// The state hook (`[speaker] state_hook`) runs through /bin/sh on every state change with the new and the
    /// previous state in its environment.
    @Test func theStateHookSeesEveryStateChange() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("hs-hook-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let rig = try await Rig.start(stateHook: "echo \"$HOUND_SPEAKER_PREVIOUS_STATE>$HOUND_SPEAKER_STATE\" >> '\(log)'")
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        // The hooks are not waited for by the loop: give the last ones a moment to finish.
        let wanted: Set = ["none>ready", "ready>recording", "recording>searching", "searching>speaking", "speaking>ready", "ready>none"]
        var seen: Set<String> = []
        for _ in 0..<100 where !wanted.isSubset(of: seen) {
            seen = Set(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init))
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(seen == wanted)
    }

    /// "OK Hound, what time is it": the detector wakes the speaker with no button, the question (recorded after
    /// the phrase, with the pre-roll) is answered and spoken, and the speaker is ready again.
    @Test func hotPhraseQueryIsAnsweredAndSpoken() async throws {
        let rig = try await Rig.start(hotPhrase: true)
        #expect(await rig.events.wait(for: "\"event\":\"hotphrase\"", seconds: 15))
        #expect(await rig.events.wait(for: "\"event\":\"final\""))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        #expect(rig.events.states == ["ready", "recording", "searching", "speaking", "ready", "none"], "\(rig.events.all)")
        #expect(rig.events.all.filter { $0.contains("\"event\":\"hotphrase\"") }.count == 1)
        #expect(rig.events.all.contains { $0.contains("\"answer\":\"It is ") })
        #expect(AudioLevel.dBFS(rig.played) > -40)
    }

    @Test func pressWhileSpeakingStopsTheAnswerShort() async throws {
        // Played at a sound card's pace (twice real time), or the whole story is written before the press lands.
        let rig = try await Rig.start(question: "tell me a story", transcript: "tell me a story", pacedSpeaker: true)
        // The press comes as the speaker starts to speak.
        let loop = rig.loop
        rig.events.react.withLock { $0 = { line in if line.contains("\"to\":\"speaking\"") { loop.send(.talk) } } }
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        // The whole story is about 25 s of speech; what was played is a small part of it.
        let engine = try SpeechEngine(settings: VoiceSettings())
        let full = try await engine.speak(AnswerBook.story, to: .memory).result().get().sampleCount
        #expect(rig.played.count < full / 4, "played \(rig.played.count) of \(full) samples")
        #expect(rig.played.count > 2205, "nothing reached the speaker")
    }

    @Test func serverDownIsSpokenAsNoInternet() async throws {
        let rig = try await Rig.start(serviceUp: false)
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"kind\":\"offline\""))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        #expect(rig.events.states.prefix(5) == ["ready", "recording", "speaking", "ready", "none"] || rig.events.states.prefix(5) == ["ready", "recording", "searching", "speaking", "ready"])
        #expect(AudioLevel.dBFS(rig.played) > -40)  // "I can't reach the internet." was said
    }

    @Test func refusedKeyIsSpoken() async throws {
        let rig = try await Rig.start(key: "-yBFao-02f4jSG2St9wBJktwlbrfBClOc5i94gcsUXabwOUKL1R5nsPoDTJXfKHG6xA1Wn-kye4TOF2Cp8zxFg==")
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"kind\":\"authentication\""))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
    }

    @Test func stalledServerTimesOutToReady() async throws {
        let rig = try await Rig.start(fault: .stall, responseTimeoutMS: 300)
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"kind\":\"serviceFailing\""))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        #expect(rig.loop.currentState == .none)
    }

    /// A search refused while the person is still speaking (here a key the service refuses at once) must give
    /// the microphone back: it once stayed open, and every later query was fed two or three streams at once.
    @Test func aSearchThatFailsWhileRecordingGivesTheMicrophoneBack() async throws {
        let rig = try await Rig.start(key: "-yBFao-02f4jSG2St9wBJktwlbrfBClOc5i94gcsUXabwOUKL1R5nsPoDTJXfKHG6xA1Wn-kye4TOF2Cp8zxFg==")
        for round in 0..<3 {
            let seen = rig.events.all.count
            rig.loop.send(.talk)
            #expect(await rig.events.wait(for: "\"kind\":\"authentication\"", after: seen))
            #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\"", after: seen))
            #expect(ALSACapture.openCount(device: "test_loop_mic") == 0, "round \(round): the microphone is still open")
        }
        await rig.stop()
        #expect(rig.events.states.filter { $0 == "recording" }.count == 3)
        // Whether a round fails while recording or just after depends on how fast the file microphone is read
        // (it is not paced) against the refusal: the microphone must be back either way, as checked each round.
    }

    /// With the hot phrase on, a microphone missing at start is looked for until it appears; meanwhile a press is
    /// told that the microphone is not working (not fifteen seconds of nothing and an earcon).
    @Test func aMicrophoneMissingAtStartIsHeardOnceItAppears() async throws {
        let rig = try await Rig.start(hotPhrase: true, microphone: "test_late_mic", microphonePresent: false)
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"kind\":\"microphone\""))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        #expect(ALSACapture.openCount(device: "test_late_mic") == 0)
        // The microphone appears: "OK Hound, what time is it" wakes the speaker, with no restart.
        try Rig.writeHotPhraseQuestion(to: "test_late_mic")
        #expect(await rig.events.wait(for: "\"event\":\"hotphrase\"", seconds: 20))
        #expect(await rig.events.wait(for: "\"answer\":\"It is "))
        await rig.stop()
        #expect(ALSACapture.openCount(device: "test_late_mic") == 0)
    }

    /// A speaker (output device) missing at start: the speaker still starts, answers into nothing, and shows the
    /// error pattern in ready (nothing could be said); once the card is there, the next answer is heard and ready
    /// looks like ready again, with no restart.
    @Test func aSpeakerMissingAtStartIsUsedOnceItAppears() async throws {
        let rig = try await Rig.start(speaker: "test_late_speaker")
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"answer\":\"It is "))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        #expect(await rig.events.wait(for: "\"event\":\"leds\",\"show\":\"error\""))
        #expect(!FileManager.default.fileExists(atPath: TestALSA.outputFile("test_late_speaker")))

        try TestALSA.plugInLateSpeaker()
        let seen = rig.events.all.count
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"answer\":\"It is ", after: seen))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\"", after: seen))
        #expect(await rig.events.wait(for: "\"event\":\"leds\",\"show\":\"ready\"", after: seen))
        await rig.stop()
        let heard = (try? readRawInt16(TestALSA.outputFile("test_late_speaker"))) ?? []
        #expect(AudioLevel.dBFS(heard) > -40, "\(heard.count) samples")
    }

    /// Houndify's own voice ([houndify] voice): the answer's recording is played instead of espeak-ng, on the
    /// same output; refused (ResponseAudioError), espeak-ng says it.
    @Test(arguments: ["Local", "Unavailable"]) func houndifysOwnVoiceOrEspeakNG(voice: String) async throws {
        let rig = try await Rig.start()
        rig.search.setRequestInfo(["ResponseAudioVoice": .string(voice), "ResponseAudioShortOrLong": "Long",
                                   "ResponseAudioAcceptedEncodings": ["WAV"]])
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"answer\":\"It is "))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        let final = rig.events.all.first { $0.contains("\"event\":\"final\"") } ?? ""
        #expect(final.contains("\"voice\":\"houndify\"") == (voice == "Local"), "\(final)")
        let heard = (try? readRawInt16(TestALSA.outputFile("test_loop_speaker"))) ?? []
        #expect(AudioLevel.dBFS(heard) > -40, "\(heard.count) samples")
    }

    @Test func autoListenAsksTheFollowUp() async throws {
        let rig = try await Rig.start(question: "set a timer", transcript: "set a timer")
        // The follow-up question: the microphone fixture is read again, and this time heard as "five minutes".
        let search = rig.search
        rig.events.react.withLock { $0 = { line in
            if line.contains("For how long?") { search.setRequestInfo(["LocalServiceTranscript": "five minutes"]) }
        } }
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"answer\":\"For how long?\""))
        // The timer is set, and Houndify's words for that branch said.
        #expect(await rig.events.wait(for: "\"answer\":\"Your timer is set for 5 minutes.\""))
        #expect(await rig.events.wait(for: "\"event\":\"timer\",\"change\":\"set\""))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\"", after: rig.events.all.firstIndex { $0.contains("5 minutes") } ?? 0))
        await rig.stop()
        #expect(Array(rig.events.states.prefix(7)) == ["ready", "recording", "searching", "speaking", "recording", "searching", "speaking"])
    }
}
