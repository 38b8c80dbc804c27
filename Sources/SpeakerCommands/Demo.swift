import DeviceCommands
import Assembly
import DeviceAssembly
import AudioCore
import CommandSupport
import Audio
import FoundationEssentials
import Glibc
import Platform
import HotPhrase
import Houndify
import HoundifyAnswers
import JSONKit
import Logging
import SpeakerCore
import SpeakerRuntime
import SpeakerConfig
import Speech
import Timers

/// One whole interaction with no hardware and no credentials: the local Houndify service (its own program, as a
/// child on a free loopback port), the
/// microphone played from a recording ("OK Hound ... what time is it") through a real ALSA `file` PCM in real
/// time, the hot-phrase detector waking the speaker, the real libcurl client, end-of-speech detection, espeak-ng
/// speaking the answer. Then a typed conversation with the same speaker, as `ctl text` has it: a timer, set in
/// two turns, and cancelled (the speaker carries timers out itself; `hound-speaker text` only prints answers).
public struct Demo {
    let output: String?

    /// `output`: a WAV file for the spoken answer (nil: the sound card, else hound-speaker-demo.wav).
    public init(output: String?) { self.output = output }

    static let id = "AAECAwQFBgcICQoLDA0ODw=="
    static let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="

    public func run() async throws {
        // The recording, as raw 16 kHz samples for the capture PCM.
        guard let recording = ShippedFiles.locate("ok-hound-what-time-is-it.wav", in: .demo) else {
            throw CommandFailure(message: "the demo recording ok-hound-what-time-is-it.wav is not in \(ShippedFiles.directories(.demo).joined(separator: ", "))")
        }
        let audio: MonoAudio
        do throws(AudioFileError) { audio = try AudioFile.readMono(path: recording) } catch { throw CommandFailure(message: error.description) }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("hound-speaker-demo-\(getpid())").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        try audio.samples.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: "\(work)/mic.raw")) }
        // The system's ALSA configuration plus a microphone that plays the recording.
        try FileDevice.install([.microphone("demo_microphone", reads: "\(work)/mic.raw")], asoundrc: "\(work)/asoundrc")

        LoggingBootstrap.once(level: .warning)
        var logger = Logger(label: "demo")
        logger.logLevel = .warning

        // The service's own config: the demo's made-up credentials, readable by this user only.
        let serviceConfig = "\(work)/service.toml"
        close(open(serviceConfig, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600))
        try Data("[houndify]\nclient_id = \"\(Self.id)\"\nclient_key = \"\(Self.key)\"\n[logging]\nlevel = \"warning\"\n".utf8)
            .write(to: URL(fileURLWithPath: serviceConfig))
        let service = try await LocalServiceProcess.start(configPath: serviceConfig)
        let port = service.port
        printLine("local Houndify service on http://127.0.0.1:\(port) (no account needed)")
        let profile = ClientProfile(clientID: Self.id, userID: "demo", deviceID: "demo", latitude: 37.3875, longitude: -122.0575,
                                    timeZone: SystemTimeZone.identifier())
        let client = try HoundifyClient(configuration: HoundifyClientConfiguration(
            endpoint: "http://127.0.0.1:\(port)", clientKey: Self.key, profile: profile, callerKeepsActionState: true))

        let speechOutput = Self.chooseOutput(output)
        var config = SpeakerConfiguration()
        config.audio.input = "demo_microphone"
        config.hotphrase.model = ShippedFiles.locate("ok-hound.hpm", in: .hotPhrase) ?? ""
        // The shipped default sensitivity, as on a speaker: the model wakes on this recording at it (its score peaks
        // at 0.967 against the threshold 0.626; BENCHMARKS.md, "Issue #37", the shipped model). The recording is a demonstration, not
        // evidence of accuracy.
        config.hotphrase.enabled = true
        var speaker: SpeakerAssembly
        do throws(AssemblyError) { speaker = try SpeakerAssembly(config: config, logger: logger, client: client, output: speechOutput) } catch {
            throw CommandFailure(error)
        }
        speaker.capture.pacing = .realTime
        speaker.search?.setRequestInfo(["LocalServiceTranscript": "what time is it"])
        let recorder = ActivityRecorder()
        speaker.observers += [recorder.observer, { Self.show($0) }]
        let loop = speaker.makeLoop()
        printLine("[microphone] plays \(URL(fileURLWithPath: recording).lastPathComponent) in real time; the speaker listens for \"OK Hound\" (the default sensitivity)")
        let done = await withDiscardingTaskGroup { group -> Result<Void, CommandFailure> in
            group.addTask { await loop.run() }
            defer { loop.send(.shutdown) }
            guard await recorder.wait(timeout: .seconds(audio.duration + 5), for: { $0 == .hotPhrase }) else {
                return .failure(CommandFailure(message: "the hot phrase was not heard in \(recording)"))
            }
            guard await recorder.wait(for: .stateChanged(from: .speaking, to: .ready), timeout: .seconds(60)) else {
                return .failure(CommandFailure(message: "the interaction did not complete within 60 s"))
            }
            return await Self.typedConversation(loop, recorder)
        }
        await service.stop()
        try done.get()
        if case .file(let path) = speechOutput { printLine("the answer was spoken into \(path)") }
    }

    /// The typed questions, each once the answer before has been said. The second comes while the microphone is
    /// open for a spoken reply to "For how long?": a typed reply takes its place.
    static let typed = ["set a timer", "ten minutes", "how much time is left on my timer", "cancel the timer"]

    static func typedConversation(_ loop: SpeakerLoop, _ recorder: ActivityRecorder) async -> Result<Void, CommandFailure> {
        printLine("== typed questions to the same speaker (as `hound-speaker ctl text` sends them to `run`)")
        for (index, query) in typed.enumerated() {
            let id = index + 1
            printLine("[you typed] \(query)")
            let mark = recorder.count
            loop.send(.textQuery(query, id: id))
            // The demo alone speaks to this loop, so its own reports are among the last few.
            let ended: @Sendable (SpeakerActivity) -> Bool = { if case .question(let r) = $0, r.id == id, r.isEnd { true } else { false } }
            guard await recorder.wait(after: mark, timeout: .seconds(30), for: ended) else {
                return .failure(CommandFailure(message: "the typed question \"\(query)\" was not answered within 30 s"))
            }
            let report = recorder.all.last(where: ended).flatMap { if case .question(let r) = $0 { r } else { nil } }
            guard case .answered? = report?.status else {
                return .failure(CommandFailure(message: "the typed question \"\(query)\" was not answered: \(String(describing: report?.status))"))
            }
            // Said whole before the next (to ready, or to the microphone reopened for a spoken reply).
            let said: @Sendable (SpeakerActivity) -> Bool = { if case .stateChanged(from: .speaking, _) = $0 { true } else { false } }
            guard await recorder.wait(after: mark, timeout: .seconds(60), for: said) else {
                return .failure(CommandFailure(message: "the answer to \"\(query)\" did not end within 60 s"))
            }
        }
        return .success(())
    }

    /// The loop's activity as lines a person reads.
    static func show(_ activity: SpeakerActivity) {
        switch activity {
        case .hotPhrase: printLine("[hot phrase] \"OK Hound\" heard")
        case .stateChanged(let from, let to): printLine("[state] \(from.rawValue) -> \(to.rawValue)")
        case .partialTranscript(let text) where !text.isEmpty: printLine("[heard so far] \(text)")
        case .finalTranscript(let transcript, let answer, _, _, _):
            printLine("[transcript] \(transcript)")
            printLine("[answer] \(answer)")
        case .searchFailed(let error): printLine("[error] \(error.failure.rawValue)")
        case .timer(let change, let timer, let remaining) where change != .tick:
            printLine("[timer \(timer.id)] \(change.rawValue): \(timer.spokenName), \(SpokenDuration.words(remaining)) left")
        case .question(let report):
            if case .refused(let reason) = report.status { printLine("[refused] \(reason)") }
            if case .dropped(let reason) = report.status { printLine("[dropped] \(reason)") }
        case .timings(let timings): printLine("[\(timings.line)]")
        default: break
        }
    }

    static func chooseOutput(_ requested: String?) -> SpeechOutput {
        if let requested { return .file(requested) }
        do throws(AudioDeviceError) {
            let probe = try ALSAPlayback(device: "default", sampleRate: 22050)
            probe.close()
            return .device("default")
        } catch {
            return .file("hound-speaker-demo.wav")
        }
    }
}
