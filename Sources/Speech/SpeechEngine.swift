public import Audio
public import AudioCore
import CEspeakNG
import FoundationEssentials
import Glibc
import Platform
import Synchronization

public enum SpeechOutcome: Sendable, Equatable {
    /// The whole text was spoken.
    case finished
    /// stopSpeaking cut it short.
    case interrupted
}

public struct SpeechError: Error, CustomStringConvertible, Equatable {
    public var message: String
    /// The settings asked for something espeak-ng does not have (a voice): a configuration problem, which a
    /// restart will not mend.
    public var isConfiguration: Bool
    /// The output device could not be opened or stopped taking samples (a speaker unplugged or not there yet).
    public var isOutputDevice: Bool
    public init(_ message: String, isConfiguration: Bool = false, isOutputDevice: Bool = false) {
        self.message = message
        self.isConfiguration = isConfiguration
        self.isOutputDevice = isOutputDevice
    }
    public var description: String { message }
}

/// Where speech goes.
public enum SpeechOutput: Sendable {
    /// An ALSA PCM, e.g. "default".
    case device(String)
    /// A 16-bit mono WAV file.
    case file(String)
    /// Kept in memory (tests, or further processing): the samples come back in the result.
    case memory
}

public struct SpeechResult: Sendable, Equatable {
    public var outcome: SpeechOutcome
    public var sampleRate: Int
    /// For `.memory` output: the speech, lead-in included.
    public var samples: [Int16]
    /// Samples produced in all (lead-in included).
    public var sampleCount: Int
}

/// A running utterance.
public final class SpeechTask: Sendable {
    fileprivate let content: Content
    fileprivate let output: SpeechOutput
    fileprivate let volume: OutputVolume?
    /// Told what reaches the device, as the echo canceller's reference.
    fileprivate let echo: EchoCanceller?

    enum Content: Sendable {
        case text(String)
        /// A recorded sound (an earcon), played as it is.
        case audio(MonoAudio)
    }
    fileprivate let stopRequested = Mutex(false)
    private let state = Mutex<(result: Result<SpeechResult, SpeechError>?, waiters: [CheckedContinuation<Result<SpeechResult, SpeechError>, Never>])>((nil, []))
    private let firstAudio = Mutex<(at: ContinuousClock.Instant?, waiters: [CheckedContinuation<Void, Never>])>((nil, []))
    /// When the request to speak was made.
    public let requestedAt = ContinuousClock.now

    fileprivate let settings: VoiceSettings

    fileprivate let onFirstSample: (@Sendable () -> Void)?

    /// The engine that queued it (stopSpeaking stops only its own engine's speech).
    fileprivate let owner: Int

    fileprivate init(content: Content, output: SpeechOutput, settings: VoiceSettings, volume: OutputVolume?, echo: EchoCanceller?,
                     owner: Int, onFirstSample: (@Sendable () -> Void)?) {
        self.owner = owner
        self.echo = echo
        self.content = content
        self.output = output
        self.volume = volume
        self.settings = settings
        self.onFirstSample = onFirstSample
    }

    /// stopSpeaking: synthesis stops and queued audio is dropped, not played out.
    public func stop() { stopRequested.withLock { $0 = true } }

    /// Waits for the end of the utterance.
    public func result() async -> Result<SpeechResult, SpeechError> {
        await withCheckedContinuation { waiter in
            let ready = state.withLock { s -> Result<SpeechResult, SpeechError>? in
                if let r = s.result { return r }
                s.waiters.append(waiter)
                return nil
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }

    /// Waits until the first sample of speech (after the lead-in) has been handed to the output.
    public func firstSpeechSample() async -> ContinuousClock.Instant? {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let ready = firstAudio.withLock { f -> Bool in
                if f.at != nil { return true }
                f.waiters.append(waiter)
                return false
            }
            if ready { waiter.resume() }
        }
        return firstAudio.withLock { $0.at }
    }

    fileprivate func markFirstAudio() {
        let waiters = firstAudio.withLock { f -> [CheckedContinuation<Void, Never>] in
            guard f.at == nil else { return [] }
            f.at = .now
            defer { f.waiters.removeAll() }
            return f.waiters
        }
        for w in waiters { w.resume() }
    }

    fileprivate func complete(_ result: Result<SpeechResult, SpeechError>) {
        // Whoever waits for a first sample that never came is released too.
        let audioWaiters = firstAudio.withLock { f -> [CheckedContinuation<Void, Never>] in defer { f.waiters.removeAll() }; return f.waiters }
        for w in audioWaiters { w.resume() }
        let waiters = state.withLock { s -> [CheckedContinuation<Result<SpeechResult, SpeechError>, Never>] in
            s.result = result
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for w in waiters { w.resume(returning: result) }
    }
}

/// espeak-ng on one thread the app owns (espeak-ng is a process-wide singleton and not thread-safe), speaking
/// one utterance at a time, streaming each 20 ms block to the output as it is synthesised. Every engine in the
/// process shares that one thread; each utterance carries its engine's voice settings.
public final class SpeechEngine: Sendable {
    public let settings: VoiceSettings
    public let sampleRate: Int
    /// Applied to what goes to a device (not to files or memory).
    public let volume: OutputVolume?
    /// Told everything played on a device, as its reference (`[audio] echo_cancel`).
    public let echo: EchoCanceller?

    /// Starts the speech thread if needed and checks the voice; fails with the reason if espeak-ng or the voice
    /// is missing.
    public init(settings: VoiceSettings, volume: OutputVolume? = nil, echo: EchoCanceller? = nil) throws(SpeechError) {
        self.settings = settings
        self.volume = volume
        self.echo = echo
        sampleRate = try SpeechCore.shared.check(settings)
    }

    /// Plays a recorded sound (an earcon) through the same queue and output as speech.
    public func play(_ audio: MonoAudio, to output: SpeechOutput, onFirstSample: (@Sendable () -> Void)? = nil) -> SpeechTask {
        let task = SpeechTask(content: .audio(audio), output: output, settings: settings, volume: volume, echo: echo, owner: id, onFirstSample: onFirstSample)
        SpeechCore.shared.enqueue(.speak(task))
        return task
    }

    /// Queues `text`; it is spoken after what is already queued. `onFirstSample` runs on the speech thread as the
    /// first block of speech goes out, before synthesis continues (for timing, and for tests that must act at a
    /// known point of the utterance).
    public func speak(_ text: String, to output: SpeechOutput, onFirstSample: (@Sendable () -> Void)? = nil) -> SpeechTask {
        let task = SpeechTask(content: .text(text), output: output, settings: settings, volume: volume, echo: echo, owner: id, onFirstSample: onFirstSample)
        SpeechCore.shared.enqueue(.speak(task))
        return task
    }

    /// Stops this engine's current utterance at once and drops what it has queued (other engines in the process,
    /// which share the speech thread, are left alone).
    public func stopSpeaking() { SpeechCore.shared.stopAll(owner: id) }

    private let id: Int = SpeechEngine.nextID.withLock { $0 += 1; return $0 }
    private static let nextID = Mutex(0)
}

/// The speech thread. The queue and the current task are guarded by `condition`; everything espeak-ng touches
/// runs on the thread.
/// @unchecked: espeak-ng's state is one C library's global state, used by the speech thread only; the rest is
/// guarded by `condition` (a pthread condition, which Mutex cannot wait on).
private final class SpeechCore: @unchecked Sendable {
    static let shared = SpeechCore()

    enum Job {
        case speak(SpeechTask)
        case check(VoiceSettings, reply: Reply)
    }

    /// @unchecked: written by the speech thread and read by the waiter, both under SpeechCore's `condition`.
    final class Reply: @unchecked Sendable {
        var value: Result<Int, SpeechError>?
    }

    private let condition = Condition()
    private var queue: [Job] = []
    private var current: SpeechTask?
    private var started = false
    private var sampleRate = 0

    func enqueue(_ job: Job) {
        condition.lock()
        if !started {
            started = true
            OwnedThread.start(name: "hs-speech") { [self] in threadMain() }
        }
        queue.append(job)
        condition.broadcast()
        condition.unlock()
    }

    /// Runs a voice check on the speech thread and waits for it (a few milliseconds, at start-up).
    func check(_ settings: VoiceSettings) throws(SpeechError) -> Int {
        let reply = Reply()
        enqueue(.check(settings, reply: reply))
        condition.lock()
        while reply.value == nil { condition.wait() }
        let value = reply.value!
        condition.unlock()
        return try value.get()
    }

    func stopAll(owner: Int) {
        condition.lock()
        var dropped: [SpeechTask] = []
        queue.removeAll { job in
            if case .speak(let task) = job, task.owner == owner { dropped.append(task); return true }
            return false
        }
        let running = current?.owner == owner ? current : nil
        let rate = sampleRate
        condition.unlock()
        for task in dropped { task.complete(.success(SpeechResult(outcome: .interrupted, sampleRate: rate, samples: [], sampleCount: 0))) }
        running?.stop()
    }

    /// Sets the voice from a voice name or file ("gmw/en-US"), or a language code as `espeak-ng -v` takes it
    /// ("en-gb", which espeak_SetVoiceByName alone refuses), each with an optional variant ("en-gb+f3").
    /// Speech thread only.
    private static func selectVoice(_ wanted: String) -> Bool {
        if espeak_SetVoiceByName(wanted) == EE_OK { return true }
        let parts = wanted.split(separator: "+", maxSplits: 1).map(String.init)
        guard let language = parts.first?.lowercased(), !language.isEmpty else { return false }
        var best: (priority: UInt8, identifier: String)? = nil
        if var entry = espeak_ListVoices(nil) {
            while let voice = entry.pointee {
                defer { entry += 1 }
                guard var p = voice.pointee.languages, let identifier = voice.pointee.identifier else { continue }
                // languages: a priority byte then a NUL-terminated code, repeated, ending in a zero priority.
                while p.pointee != 0 {
                    let priority = UInt8(bitPattern: p.pointee)
                    let code = String(cString: p + 1)
                    if code.lowercased() == language, priority < (best?.priority ?? .max) {
                        best = (priority, String(cString: identifier))
                    }
                    p += 1 + code.utf8.count + 1
                }
            }
        }
        guard let best else { return false }
        let name = parts.count > 1 ? "\(best.identifier)+\(parts[1])" : best.identifier
        return espeak_SetVoiceByName(name) == EE_OK
    }

    private func threadMain() {
        let rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 20, nil, Int32(espeakINITIALIZE_DONT_EXIT))
        if rate > 0 { espeak_SetSynthCallback(synthCallback) }
        condition.lock()
        sampleRate = Int(rate)
        condition.unlock()
        var applied: VoiceSettings? = nil

        func apply(_ settings: VoiceSettings) -> SpeechError? {
            guard rate > 0 else { return SpeechError("espeak-ng could not start (is its data installed? apt install espeak-ng-data)") }
            if applied == settings { return nil }
            guard Self.selectVoice(settings.voice) else {
                applied = nil
                return SpeechError("espeak-ng has no voice \"\(settings.voice)\" (`espeak-ng --voices` lists them)", isConfiguration: true)
            }
            espeak_SetParameter(espeakRATE, Int32(settings.rate), 0)
            espeak_SetParameter(espeakPITCH, Int32(settings.pitch), 0)
            espeak_SetParameter(espeakVOLUME, Int32(settings.volume), 0)
            applied = settings
            return nil
        }

        while true {
            condition.lock()
            while queue.isEmpty { condition.wait() }
            let job = queue.removeFirst()
            if case .speak(let task) = job { current = task }
            condition.unlock()
            switch job {
            case .check(let settings, let reply):
                let problem = apply(settings)
                condition.lock()
                reply.value = problem.map { .failure($0) } ?? .success(Int(rate))
                condition.broadcast()
                condition.unlock()
            case .speak(let task):
                if let problem = apply(task.settings) {
                    task.complete(.failure(problem))
                } else {
                    run(task, sampleRate: Int(rate))
                }
                condition.lock()
                current = nil
                condition.unlock()
            }
        }
    }

    private func run(_ task: SpeechTask, sampleRate: Int) {
        if case .audio(let audio) = task.content {
            play(task, audio)
            return
        }
        guard case .text(let text) = task.content else { return }
        perform(SynthJob(task: task, sampleRate: sampleRate)) { job throws(SpeechError) in
            job.writeSilence(ms: task.settings.leadInMS)
            let unmanaged = Unmanaged.passRetained(job)
            defer { unmanaged.release() }
            let utf8 = Array(text.utf8CString)
            let rc = utf8.withUnsafeBufferPointer { buf in
                espeak_Synth(buf.baseAddress, buf.count, 0, POS_CHARACTER, 0, UInt32(espeakCHARS_UTF8), nil, unmanaged.toOpaque())
            }
            if rc != EE_OK && !job.stopped { throw SpeechError("espeak-ng could not synthesise the text (error \(rc.rawValue))") }
        }
    }
}

extension SpeechCore {
    /// An earcon: written in 20 ms blocks so a stop takes effect between them.
    func play(_ task: SpeechTask, _ audio: MonoAudio) {
        perform(SynthJob(task: task, sampleRate: audio.sampleRate)) { job throws(SpeechError) in
            let block = max(1, audio.sampleRate / 50)
            var index = 0
            while index < audio.samples.count {
                let end = min(index + block, audio.samples.count)
                guard audio.samples[index..<end].withUnsafeBufferPointer({ job.speech($0) }) else { break }
                index = end
            }
        }
    }

    /// Opens the job's output, produces the audio, closes the output and completes the task with the outcome or
    /// the first failure (the output's included).
    func perform(_ job: SynthJob, produce: (SynthJob) throws(SpeechError) -> Void) {
        do throws(SpeechError) {
            try job.open()
            try produce(job)
            if let failure = job.failure { throw failure }
            let result = job.finish()
            if let failure = job.failure { throw failure }
            job.task.complete(.success(result))
        } catch {
            job.abandon()
            job.task.complete(.failure(error))
        }
    }
}

/// One utterance on the speech thread: where its samples go.
fileprivate final class SynthJob {
    let task: SpeechTask
    let sampleRate: Int
    var playback: ALSAPlayback?
    var fileSamples: [Int16] = []
    var count = 0
    var stopped = false
    var failure: SpeechError?
    var sawSpeech = false
    /// Reused for software volume, so a block allocates nothing.
    var scaled: [Int16] = []

    init(task: SpeechTask, sampleRate: Int) {
        self.task = task
        self.sampleRate = sampleRate
    }

    func open() throws(SpeechError) {
        if case .device(let name) = task.output {
            // The mixer control at the speaker's level again before the device opens (a card back from being
            // unplugged, or a softvol control made anew, starts at full volume). A failure here does not silence
            // the answer: the next volume change reports the mixer's error.
            try? task.volume?.reapply()
            do { playback = try ALSAPlayback(device: name, sampleRate: sampleRate) } catch {
                throw SpeechError(error.description, isOutputDevice: true)
            }
            playback?.echo = task.echo
        }
    }

    func writeSilence(ms: Int) {
        let silence = [Int16](repeating: 0, count: sampleRate * ms / 1000)
        silence.withUnsafeBufferPointer { _ = write($0) }
    }

    /// Returns false when synthesis must stop.
    func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool {
        if task.stopRequested.withLock({ $0 }) { stopped = true; return false }
        switch task.output {
        case .device:
            let gain = task.volume?.softwareGain ?? 1
            do throws(AudioDeviceError) {
                if gain == 1 {
                    try playback?.write(samples)
                } else {
                    if scaled.count < samples.count { scaled = [Int16](repeating: 0, count: samples.count) }
                    for i in 0..<samples.count { scaled[i] = Int16(Float(samples[i]) * gain) }
                    let count = samples.count
                    var failed: AudioDeviceError? = nil
                    scaled.withUnsafeBufferPointer { buffer in
                        do throws(AudioDeviceError) { try playback?.write(UnsafeBufferPointer(rebasing: buffer[0..<count])) } catch { failed = error }
                    }
                    if let failed { throw failed }
                }
            } catch {
                failure = SpeechError(error.description, isOutputDevice: true)
                return false
            }
        case .file, .memory:
            fileSamples.append(contentsOf: samples)
        }
        count += samples.count
        return !task.stopRequested.withLock { $0 }
    }

    func speech(_ samples: UnsafeBufferPointer<Int16>) -> Bool {
        let go = write(samples)
        if !sawSpeech && go {
            sawSpeech = true
            task.markFirstAudio()
            task.onFirstSample?()
        }
        return go && !task.stopRequested.withLock { $0 }
    }

    func finish() -> SpeechResult {
        let outcome: SpeechOutcome = stopped || task.stopRequested.withLock({ $0 }) ? .interrupted : .finished
        if let playback {
            // Interrupted: drop what is queued; finished: let the last words play out.
            if outcome == .interrupted { playback.stop() } else { playback.drain() }
            playback.close()
        }
        if case .file(let path) = task.output {
            do throws(AudioFileError) { try AudioFile.writeWAV(MonoAudio(samples: fileSamples, sampleRate: sampleRate), to: path) } catch {
                failure = SpeechError(error.description)
            }
        }
        let memory: [Int16]
        if case .memory = task.output { memory = fileSamples } else { memory = [] }
        return SpeechResult(outcome: outcome, sampleRate: sampleRate, samples: memory, sampleCount: count)
    }

    func abandon() {
        playback?.stop()
        playback?.close()
    }
}

/// espeak-ng's synthesis callback (a C function: it reaches its job through the event's user data).
private let synthCallback: @convention(c) (UnsafeMutablePointer<Int16>?, Int32, UnsafeMutablePointer<espeak_EVENT>?) -> Int32 = { wav, count, events in
    guard let events, let user = events.pointee.user_data else { return 0 }
    let job = Unmanaged<SynthJob>.fromOpaque(user).takeUnretainedValue()
    guard let wav, count > 0 else { return job.task.stopRequested.withLock { $0 } ? 1 : 0 }
    return job.speech(UnsafeBufferPointer(start: wav, count: Int(count))) ? 0 : 1
}
