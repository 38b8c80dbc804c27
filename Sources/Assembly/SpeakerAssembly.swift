public import DeviceAssembly
public import Audio
public import AudioCore
public import Board
public import BoardCore
import Glibc
public import Houndify
public import HoundifyAnswers
import HoundifyCore
import HotPhrase
import OfflineRecognition
public import Logging
import Platform
public import SpeakerConfig
public import SpeakerCore
public import SpeakerRuntime
public import Speech

/// The speaker put together from its config: every driver made and adapted to the core's ports (wiring only;
/// every behaviour lives in its module). Callers may change the parts before `makeLoop` (the demo paces its
/// file microphone in real time and writes speech to a file).
public struct SpeakerAssembly {
    public let config: SpeakerConfiguration
    public let logger: Logger
    /// Houndify's search; nil in setup mode (no credentials yet), where `setupGate` stands in for it.
    public var search: HoundifyVoiceSearch?
    /// Setup mode's stand-in for Houndify's search, which installs it once the credentials are saved.
    public var setupGate: SetupGate?
    public var speech: EngineSpeech
    public var volume: OutputVolume
    public var capture: CaptureSettings
    /// The echo canceller between the speech output and the microphone (`[audio] echo_cancel`); nil: off.
    public var echo: EchoCanceller?
    public var board: BoardRunner?
    public var hotPhrase: HotPhraseListener?
    public var settings = SpeakerLoopSettings()
    public var observers: [@Sendable (SpeakerActivity) -> Void] = []
    /// Told each gesture of the board's button as the board sees it (Home Assistant's button events).
    public var buttonObservers: [@Sendable (ButtonGestures.Event) -> Void] = []
    /// Wraps Houndify's search before the device's own recogniser goes behind it (Home Assistant's hand-off).
    public var wrapSearch: (@Sendable (any VoiceSearchService) -> any VoiceSearchService)?
    /// Where timers are saved (nil: in memory only).
    public var timerStore: (any TimerStore)?
    /// Where mute is remembered (nil: not at all).
    public var muteStore: (any FlagStore)?
    /// The speaker's local time (`[location] timezone`; setup mode's page may set it).
    public let calendar: SpeakerCalendar

    /// `client` nil: setup mode (set `setupGate`).
    public init(config: SpeakerConfiguration, logger: Logger, client: HoundifyClient?, output: SpeechOutput) throws(AssemblyError) {
        self.config = config
        self.logger = logger
        calendar = SpeakerCalendar(zone: config.location.timezone)
        volume = try DeviceAssembly.outputVolume(config, for: output)
        let earcons: [Earcon: MonoAudio]
        // Barge-in needs the hot phrase: without it the canceller would only clean questions asked by the button,
        // which are never asked over the speaker's own sound (a press stops it first).
        echo = config.audio.echo.enabled && config.hotphrase.enabled ? EchoCanceller(settings: config.audio.echo) : nil
        let engine = try DeviceAssembly.speechEngine(config, volume: volume, echo: echo)
        do throws(SpeechError) {
            earcons = try Earcons.load(overrides: config.audio.earcons)
        } catch {
            // A configured sound that is missing or not audio, or the shipped ones not installed: no restart mends it.
            throw AssemblyError(.configuration, "\(config.path ?? "config"): [audio] earcons: \(error)")
        }
        speech = EngineSpeech(engine: engine, output: output, earcons: earcons)
        search = client.map { Self.search($0, config: config) }
        capture = config.audio.capture
        settings.endpointer = config.listening
        settings.machine = config.speaker.machine
        settings.machine.bargeIn = echo != nil
        if let file = config.speaker.timersFile, !file.isEmpty { timerStore = TimerFile(path: file) }
        if let file = config.speaker.muteFile, !file.isEmpty { muteStore = FlagFile(path: file) }
        settings.screen = config.screen
        if let hook = StateHook.observer(config.speaker.stateHook, logger: logger) { observers.append(hook) }
        if config.hotphrase.enabled {
            let model: HotPhraseModel
            do { model = try HotPhraseModel.locate(config.hotphrase.model) } catch {
                // The model is the config's (or the installation's) to fix, so systemd does not restart for ever.
                throw AssemblyError(.configuration,
                                    "\(config.path ?? "config"): [hotphrase] model: \(error) ([hotphrase] enabled = false turns the hot phrase off)")
            }
            let (household, whyNot) = Self.household(config, model: model)
            let listener = HotPhraseListener(model: model, settings: config.hotphrase, echo: echo, household: household, logger: logger,
                                             stopWord: config.hotphrase.stopWord ? Self.stopWord(logger: logger) : nil)
            hotPhrase = listener
            // Once: which detector runs, and why not the household's when it does not.
            let detector = whyNot.map { "the generic model alone (not the household's voices: \($0))" } ?? listener.describe
            logger.notice("listening for \"\(model.phrase)\" (model \(model.path), threshold \(String(cFormat: "%.6f", listener.threshold))) with \(detector)")
            if let echo {
                logger.notice("echo cancellation on: \"\(model.phrase)\" heard over the speaker's own sound at threshold \(String(cFormat: "%.6f", listener.bargeInThreshold)) (echo delay \(echo.settings.delayMS) ms, tail \(echo.settings.tailMS) ms)")
            }
            logger.notice("while it rings or speaks: \(Self.stopWordLine(listener, echo: echo != nil))")
        }
    }

    /// Houndify's search over `client`, reading its answers as `config` says.
    public static func search(_ client: HoundifyClient, config: SpeakerConfiguration) -> HoundifyVoiceSearch {
        HoundifyVoiceSearch(client: client, reader: ClientCommandReader(
            longAnswers: config.houndify.answerLength == .long, supportedFeatures: Set(config.houndify.supportedFeatures),
            clientMatches: config.houndify.clientMatches))
    }

    /// What stops the speaker by voice while it rings or speaks, for the start's log line. Without a canceller it
    /// does not listen over its own sound at all (no barge-in: it would hear itself), so only the button does.
    static func stopWordLine(_ listener: HotPhraseListener, echo: Bool) -> String {
        echo ? "\(listener.stopWordStatus), over the echo canceller's output"
            : "nothing is listened for (echo cancellation is off), so only the button stops it; with it on: \(listener.stopWordStatus)"
    }

    /// The shipped stop word's model (`stop.hpm` in the hot-phrase folders), nil when there is none or it cannot
    /// be read (said in the log: the household's enrolled stop phrase still works).
    static func stopWord(logger: Logger) -> HotPhraseModel? {
        do { return try StopWord.locate(nil) } catch {
            logger.error("\(error): no stop word for everyone")
            return nil
        }
    }

    /// Where the household's voices are and the shipped negative bank (docs/household.md), when the model can
    /// score them (format 2) and the bank loads; else nil and why not (said once, in the start's log line).
    static func household(_ config: SpeakerConfiguration, model: HotPhraseModel) -> (HotPhraseListener.HouseholdSource?, whyNot: String?) {
        guard model.hasEmbeddings else {
            return (nil, "the model \(model.path) is format 1: no speech embedding for the household's voices")
        }
        guard !config.hotphrase.household.isEmpty else {
            return (nil, "no household folder: [hotphrase] household is \"\" and there is no state directory")
        }
        do {
            let bank = try NegativeBank.locate(nil)
            let folder = config.hotphrase.household
            return (HotPhraseListener.HouseholdSource(path: (folder.hasSuffix("/") ? folder : folder + "/") + Household.fileName, bank: bank), nil)
        } catch {
            return (nil, "\(error)")
        }
    }

    /// The loop over these parts, with the real clock. With `[speaker] offline_commands`, Houndify's search has the
    /// device's own recogniser behind it (loaded only when Houndify first cannot answer).
    public func makeLoop() -> SpeakerLoop {
        let logger = logger
        // Houndify's search, or setup mode's stand-in; one of them is there (RunSpeaker makes the gate without a client).
        var houndify: any VoiceSearchService
        if let setupGate { houndify = setupGate } else if let search { houndify = search } else {
            houndify = SetupGate { SearchFailure.notSetUp.sentence }
        }
        if let wrapSearch { houndify = wrapSearch(houndify) }
        let questions: any VoiceSearchService = settings.machine.offlineCommands
            ? OfflineFallbackSearch(inner: houndify, log: { logger.error("\($0)") }) : houndify
        let ports = SpeakerPorts(search: questions, speech: speech, volume: MixerVolume(volume), microphone: ALSAMicrophone(capture, echo: echo),
                                 board: board.map { [buttonObservers] in RunnerBoard($0, hasMuteSwitch: !config.board.muteSwitch.isEmpty, gestures: { g in for o in buttonObservers { o(g) } }) }, hotPhrase: hotPhrase, clock: DispatchClock(calendar: calendar), system: HostSystem(),
                                 timerStore: timerStore, muteStore: muteStore, commands: ShellCommands(logger: logger),
                                 screen: config.screen.backlight.isEmpty ? nil : SysfsBacklight(directory: config.screen.backlight),
                                 enrollment: hotPhrase)
        return SpeakerLoop(ports: ports, settings: settings, logger: logger, observers: observers)
    }
}
