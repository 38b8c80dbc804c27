import HoundifyAssembly
import FoundationEssentials
import Audio
import AudioCore
import BoardCore
import Houndify
import HoundifyCore
import JSONKit
import LocalHoundify
@testable import Assembly
@testable import HoundifyAnswers
import Glibc
import Logging
import SpeakerConfig
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing
import Timers

/// Houndify's client commands read into what the speaker does, from answers with the service's shapes (the local
/// service's AnswerBook makes them: Sources/LocalHoundify/ClientCommandAnswers.swift).
@Suite struct ClientCommandReaderTests {
    let book = AnswerBook()
    let reader = ClientCommandReader()

    func read(_ query: String, state: JSONValue? = nil, reader: ClientCommandReader? = nil) throws -> (answer: SpeakerAnswer, keepNow: JSONValue?) {
        var info: [String: JSONValue] = ["TimeZone": "UTC"]
        if let state { info["ConversationState"] = state }
        let json = book.answer(transcript: query, requestInfo: info, voice: false)
        let response = try HoundServerResponse(json: json, raw: Data(json.asciiJSON().utf8))
        return (reader ?? self.reader).read(response)
    }

    @Test func timerCommandsBecomeTimerActions() throws {
        #expect(try read("set a pasta timer for 10 minutes").answer.action == .timer(.set(seconds: 600, name: "pasta")))
        #expect(try read("set a timer for 1 hour 30 minutes").answer.action == .timer(.set(seconds: 5400, name: "")))
        #expect(try read("cancel the pasta timer").answer.action == .timer(.cancel(.named("pasta"))))
        #expect(try read("cancel the 10 minute timer").answer.action == .timer(.cancel(.length(seconds: 600))))
        // No criteria: every timer; Houndify's Single/Multi/All branches then fit how many there were.
        #expect(try read("cancel all timers").answer.action == .timer(.cancel(.all)))
        #expect(try read("how much time is left on the pasta timer").answer.action == .timer(.timeLeft(.named("pasta"))))
        #expect(try read("add 5 minutes to the pasta timer").answer.action == .timer(.addTime(seconds: 300, .named("pasta"))))
        #expect(try read("pause the timer").answer.action == .timer(.pause(.all)))
        #expect(try read("resume the timer").answer.action == .timer(.resume(.all)))
        #expect(try read("reset the pasta timer").answer.action == .timer(.reset(.named("pasta"))))
    }

    @Test func theBranchesComeWithTheirOwnStates() throws {
        let set = try read("set a timer for 10 minutes").answer
        #expect(set.responses?.succeeded?.text == "Your timer is set for 10 minutes.")
        #expect(set.responses?.succeeded?.conversationState?["LocalServiceBranch"] == "Succeeded")
        #expect(set.responses?.failed?.conversationState?["LocalServiceBranch"] == "Failed")
        let cancel = try read("cancel the pasta timer").answer
        #expect(cancel.responses?.succeeded?.conversationState?["LocalServiceBranch"] == "Single")
        #expect(cancel.responses?.succeededSeveral?.conversationState?["LocalServiceBranch"] == "Multi")
        #expect(cancel.responses?.noMatch?.conversationState?["LocalServiceBranch"] == "NoMatch")
        #expect(cancel.responses?.conversationState?["LocalServiceBranch"] == nil)  // the answer's own, top-level
    }

    @Test func theTwoTurnTimerEndsInASetCommand() throws {
        let first = try read("set a timer")
        #expect(first.answer.action == nil)
        #expect(first.answer.autoListen)
        #expect(first.answer.text == "For how long?")
        // The state the first turn left, handed back: the duration alone sets it.
        let json = book.answer(transcript: "set a timer", requestInfo: ["TimeZone": "UTC"], voice: false)
        let state = json["AllResults"]?[0]?["ConversationState"]
        #expect(try read("ten minutes", state: state).answer.action == .timer(.set(seconds: 600, name: "")))
    }

    @Test func alarmCommandsBecomeAlarmActions() throws {
        #expect(try read("set an alarm for 7:30 am").answer.action == .alarm(.set(minuteOfDay: 450, days: [], name: "")))
        #expect(try read("set an alarm for 6 pm on mondays and fridays").answer.action
                == .alarm(.set(minuteOfDay: 1080, days: [.monday, .friday], name: "")))
        #expect(try read("set an alarm for 7 am on weekdays").answer.action
                == .alarm(.set(minuteOfDay: 420, days: [.monday, .tuesday, .wednesday, .thursday, .friday], name: "")))
        #expect(try read("cancel the 7 am alarm").answer.action == .alarm(.cancel(.at(minuteOfDay: 420))))
        #expect(try read("cancel all alarms").answer.action == .alarm(.cancel(.all)))
        #expect(try read("what alarms do I have").answer.action == .alarm(.list))
    }

    @Test func volumeCommandsBecomeVolumeActions() throws {
        #expect(try read("set the volume to 30").answer.action == .volume(.to(30)))
        #expect(try read("turn the volume down").answer.action == .volume(.by(-10)))
        #expect(try read("turn the volume up by 20").answer.action == .volume(.by(20)))
        #expect(try read("mute").answer.action == .volume(.mute(true)))
        #expect(try read("unmute").answer.action == .volume(.mute(false)))
        // A fraction of the range is read as one.
        let json: JSONValue = ["CommandKind": "DeviceControlCommand", "DeviceControlCommandKind": "VolumeCommand",
                               "CommandType": "SetVolume", "VolumeValue": 0.25]
        #expect(ClientCommandReader.volumeAction(json) == .to(25))
    }

    @Test func whatTheSpeakerCannotDoIsSaidPlainly() throws {
        let call = try read("call mom")
        #expect(call.answer.action == nil)
        #expect(call.answer.text == SpeakerAnswer.cannotDoThat)  // not Houndify's "not supported by this client"
        #expect(call.keepNow?["LocalServiceBranch"] == nil && call.keepNow?["LocalServiceTurn"] == 1)  // the default branch's state
        // A stopwatch is a TimerSetCommand that is not a countdown.
        let stopwatch: JSONValue = ["Timer": ["IsCountdown": false]]
        #expect(ClientCommandReader.timerAction("TimerSetCommand", stopwatch) == nil)
        // A plain answer keeps its state through the client, not here.
        #expect(try read("what time is it").keepNow == nil)
    }

    @Test func requiredFeaturesAreAnsweredWhenTheSpeakerHasThem() throws {
        let result: JSONValue = [
            "CommandKind": "InformationCommand", "SpokenResponse": "Not supported.", "RequiredFeatures": ["Lights"],
            "RequiredFeaturesSupportedResult": ["SpokenResponse": "The lights are on.", "ConversationState": ["Branch": "supported"]],
            "ConversationState": ["Branch": "default"],
        ]
        let json: JSONValue = ["Format": "SoundHoundVoiceSearchResult", "Status": "OK", "AllResults": [result]]
        let response = try HoundServerResponse(json: json, raw: Data())
        let with = ClientCommandReader(supportedFeatures: ["Lights"]).read(response)
        #expect(with.answer.text == "The lights are on.")
        #expect(with.keepNow == ["Branch": "supported"])
        let without = ClientCommandReader().read(response)
        #expect(without.answer.text == "Not supported.")
        #expect(without.keepNow == ["Branch": "default"])
    }

    @Test func aVoiceThatCannotBeReadFallsBackToTheText() throws {
        let result: JSONValue = ["CommandKind": "InformationCommand", "SpokenResponse": "It is noon.",
                                 "ResponseAudioBytes": .string(Data("RIFF but not really a WAV".utf8).base64EncodedString())]
        let json: JSONValue = ["Format": "SoundHoundVoiceSearchResult", "Status": "OK", "AllResults": [result]]
        let answer = ClientCommandReader().read(try HoundServerResponse(json: json, raw: Data())).answer
        #expect(answer.voice == nil)
        #expect(answer.text == "It is noon.")
    }

    /// Houndify's own voice (a WAV, base64, inside the JSON) becomes the answer's recording at the player's rate,
    /// read from memory: nothing is written to the temporary folder.
    @Test func houndifysVoiceIsDecodedFromTheResponse() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-voice-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let samples = (0..<16_000).map { Int16(truncatingIfNeeded: Int(8000 * sin(Double($0) * 0.1))) }
        try AudioFile.writeWAV(MonoAudio(samples: samples, sampleRate: 16_000), to: path)
        let wav = try Data(contentsOf: URL(fileURLWithPath: path))
        let before = try FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path)
        let result: JSONValue = ["CommandKind": "InformationCommand", "SpokenResponse": "It is noon.",
                                 "ResponseAudioBytes": .string(wav.base64EncodedString())]
        let json: JSONValue = ["Format": "SoundHoundVoiceSearchResult", "Status": "OK", "AllResults": [result]]
        let answer = ClientCommandReader().read(try HoundServerResponse(json: json, raw: Data())).answer
        let voice = try #require(answer.voice)
        #expect(voice.sampleRate == 22_050)
        #expect(abs(voice.samples.count - 22_050) <= 4)  // one second, resampled
        #expect(answer.text == "It is noon.")
        // Other tests write to the same folder meanwhile: what must not appear is this WAV.
        let folder = FileManager.default.temporaryDirectory
        let after = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        let spilled = Set(after).subtracting(before).filter {
            (try? Data(contentsOf: folder.appendingPathComponent($0))) == wav
        }
        #expect(spilled.isEmpty, "\(spilled)")
    }

    @Test func shortOrLongAnswers() throws {
        let result: JSONValue = ["CommandKind": "InformationCommand", "SpokenResponse": "Short.", "SpokenResponseLong": "The long one."]
        let json: JSONValue = ["Format": "SoundHoundVoiceSearchResult", "Status": "OK", "AllResults": [result]]
        let response = try HoundServerResponse(json: json, raw: Data())
        #expect(ClientCommandReader(longAnswers: true).read(response).answer.text == "The long one.")
        #expect(ClientCommandReader(longAnswers: false).read(response).answer.text == "Short.")
    }
}

/// Client actions through the loop: the branch taken is spoken and its conversation state kept.
@Suite struct ClientActionLoopTests {
    static func branches(_ prefix: String) -> ActionResponses {
        func reply(_ branch: String) -> DynamicReply { DynamicReply("\(prefix) \(branch).", conversationState: ["Branch": .string(branch)]) }
        return ActionResponses(succeeded: reply("single"), succeededSeveral: reply("several"), noMatch: reply("no match"),
                               failed: reply("failed"), conversationState: ["Branch": "default"])
    }

    @Test func theBranchTakenIsSpokenAndItsStateKept() async {
        let rig = await LoopRig()
        await ask(rig, SpeakerAnswer(transcript: "set a timer", text: "", action: .timer(.set(seconds: 60, name: "tea")),
                                     responses: Self.branches("Set")))
        #expect(rig.speech.spoken.last == "Set single.")
        await ask(rig, SpeakerAnswer(transcript: "set a timer", text: "", action: .timer(.set(seconds: 120, name: "egg")),
                                     responses: Self.branches("Set")))
        await ask(rig, SpeakerAnswer(transcript: "cancel the rice timer", text: "", action: .timer(.cancel(.named("rice"))),
                                     responses: Self.branches("Cancel")))
        #expect(rig.speech.spoken.last == "There's no rice timer.")  // a failure says why, in the speaker's words
        await ask(rig, SpeakerAnswer(transcript: "cancel all timers", text: "", action: .timer(.cancel(.all)),
                                     responses: Self.branches("Cancel")))
        #expect(rig.speech.spoken.last == "Cancel several.")
        await ask(rig, SpeakerAnswer(transcript: "set a timer", text: "", action: .timer(.set(seconds: 200_000, name: "")),
                                     responses: Self.branches("Set")))
        #expect(rig.speech.spoken.last == "I can only set timers of up to 24 hours.")
        await rig.stop()
        #expect(rig.search.keptConversations == [["Branch": "single"], ["Branch": "single"], ["Branch": "no match"],
                                                 ["Branch": "several"], ["Branch": "failed"]])
    }

    @Test func withoutBranchesTheAnswersOwnStateIsKept() async {
        let rig = await LoopRig()
        await ask(rig, SpeakerAnswer(transcript: "set a timer", text: "", action: .timer(.set(seconds: 60, name: "")),
                                     responses: ActionResponses(conversationState: ["Branch": "default"])))
        #expect(rig.speech.spoken.last == "Timer set for 1 minute.")  // the speaker's own words
        await rig.stop()
        #expect(rig.search.keptConversations == [["Branch": "default"]])
    }

    @Test func volumeCommandsAreCarriedOut() async {
        let rig = await LoopRig()
        await ask(rig, SpeakerAnswer(transcript: "set the volume to 30", text: "", action: .volume(.to(30))))
        #expect(rig.volume.percent == 30)
        #expect(rig.speech.spoken.last == "Volume 30.")
        await ask(rig, SpeakerAnswer(transcript: "louder", text: "", action: .volume(.by(25)),
                                     responses: ActionResponses(succeeded: "Turning it up.")))
        #expect(rig.volume.percent == 55)
        #expect(rig.speech.spoken.last == "Volume 55.")  // one rule for every volume change: the level
        await ask(rig, SpeakerAnswer(transcript: "mute", text: "", action: .volume(.mute(true))))
        #expect(rig.volume.soundOff)
        #expect(rig.volume.percent == 55)  // kept for when the sound comes back
        #expect(await rig.saw(.volume(55, soundOff: true)))
        await ask(rig, SpeakerAnswer(transcript: "unmute", text: "", action: .volume(.mute(false))))
        #expect(!rig.volume.soundOff)
        rig.volume.breakControl()
        await ask(rig, SpeakerAnswer(transcript: "set the volume to 90", text: "", action: .volume(.to(90)),
                                     responses: ActionResponses(succeeded: "Done.", failed: "Couldn't.")))
        #expect(rig.speech.spoken.last == "Sorry, I couldn't change the volume.")
        #expect(await rig.recorder.wait { if case .deviceProblem = $0 { true } else { false } })
        await rig.stop()
    }

    /// Houndify's voice goes the way espeak-ng's does: played with the speaking LEDs, stopped at once by a press.
    @Test func houndifysVoiceIsPlayedAndAPressStopsIt() async {
        let rig = await LoopRig()
        let session = await rig.askQuestion()
        let voice = MonoAudio(samples: Array(repeating: 1000, count: 22_050 * 3), sampleRate: 22_050)
        session?.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.", voice: voice)))
        #expect(await rig.saw(.leds(.speaking)))
        #expect(rig.speech.log.last == .recording(samples: 66_150))
        #expect(rig.speech.spoken.isEmpty)  // not espeak-ng
        #expect(await rig.saw(.finalTranscript(transcript: "what time is it", answer: "It is noon.", houndifyVoice: true)))
        await rig.send(.talk, expecting: .ready)
        #expect(rig.speech.playingCount == 0)
        await rig.stop()
    }

    @Test func aTimerRingsEvenWhenTheSoundWasSwitchedOff() async {
        let rig = await LoopRig()
        await ask(rig, SpeakerAnswer(transcript: "set a timer", text: "", action: .timer(.set(seconds: 60, name: ""))))
        await ask(rig, SpeakerAnswer(transcript: "mute", text: "", action: .volume(.mute(true))))
        #expect(rig.volume.soundOff)
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(60))
        #expect(await rig.saw(.stateChanged(from: .ready, to: .ringing), after: mark))
        #expect(!rig.volume.soundOff)
        #expect(await rig.saw(.volume(50, soundOff: false), after: mark))
        await rig.stop()
    }
}

/// The owner's phrases ([[houndify.client_match]]): sent as ClientMatches, matched by the service, carried out.
@Suite struct OwnerPhraseTests {
    static let config = """
        [houndify]
        client_id = "id"
        client_key = "a2V5"
        [[houndify.client_match]]
        phrase = "Good night!"
        response = "Good night. Sleep well."
        run = "lights off"
        [[houndify.client_match]]
        expression = '("stop" | "quit") . "listening" . ["please"]'
        response = "OK, I'm not listening."
        action = "microphone_off"
        """

    @Test func phrasesAreSentMatchedAndReadBack() throws {
        let config = try ConfigLoader.parse(text: Self.config, file: "speaker.toml")
        #expect(config.houndify.clientMatches.first?.expression == #""good" . "night""#)
        let info = try config.houndifyClientConfiguration().profile.extra
        let sent = try #require(info["ClientMatches"]?.arrayValue)
        #expect(sent.count == 2)
        #expect(sent[1]["Result"] == ["HoundSpeakerMatch": 1])
        // The local service matches them as Houndify would, and the speaker reads back which one.
        let reader = ClientCommandReader(clientMatches: config.houndify.clientMatches)
        func read(_ query: String) throws -> SpeakerAnswer {
            let json = AnswerBook().answer(transcript: query, requestInfo: info.merging(["TimeZone": "UTC"]) { a, _ in a }, voice: false)
            return reader.read(try HoundServerResponse(json: json, raw: Data())).answer
        }
        let night = try read("good night")
        #expect(night.action == .run(command: "lights off"))
        #expect(night.text == "Good night. Sleep well.")
        #expect(try read("quit listening please").action == .muteMicrophone)
        #expect(try read("stop listening").action == .muteMicrophone)
        #expect(try read("stop listening now").action == nil)  // the whole transcript must match
        #expect(try read("what time is it").action == nil)
    }

    @Test func aPhraseNeedsOneWayToMatchAndOneThingToDo() {
        func problem(_ body: String) -> String {
            do { _ = try ConfigLoader.parse(text: "[[houndify.client_match]]\n" + body, file: "speaker.toml"); return "" } catch {
                return error.description
            }
        }
        #expect(problem("response = \"hi\"\nrun = \"x\"").contains("needs a phrase"))
        #expect(problem("phrase = \"hi\"").contains("needs one of run (a command), action"))
        #expect(problem("phrase = \"hi\"\nrun = \"x\"\nhome_assistant = true").contains("needs one of run (a command), action"))
        #expect(problem("phrase = \"hi\"\nhome_assistant = \"yes\"").contains("home_assistant: must be true or false"))
        // Handed to Home Assistant, it needs one to hand it to.
        #expect(problem("phrase = \"hi\"\nhome_assistant = true").contains("[houndify.client_match #1] home_assistant: needs [home_assistant] url and token"))
        #expect(problem("phrase = \"hi\"\naction = \"dance\"").contains("\"microphone_off\""))
        #expect(problem("phrase = \"hi\"\nrun = \"x\"\ncolour = \"red\"").contains("colour"))
    }

    /// Issue #65: a phrase tied to Home Assistant, and what the speaker cannot do itself, are marked for the hand-off.
    @Test func homeCommandsAreMarkedForHomeAssistant() throws {
        let text = """
            [houndify]
            client_id = "id"
            client_key = "a2V5"
            [[houndify.client_match]]
            expression = '("turn" | "switch") . ("on" | "off") . "the" . "porch" . "light"'
            home_assistant = true
            [home_assistant]
            url = "http://homeassistant.local:8123"
            token = "abc.def"
            """
        let config = try ConfigLoader.parse(text: text, file: "speaker.toml")
        #expect(config.houndify.clientMatches.first?.action == .homeAssistant)
        let info = try config.houndifyClientConfiguration().profile.extra
        let reader = ClientCommandReader(clientMatches: config.houndify.clientMatches)
        func read(_ query: String) throws -> SpeakerAnswer {
            let json = AnswerBook().answer(transcript: query, requestInfo: info.merging(["TimeZone": "UTC"]) { a, _ in a }, voice: false)
            return reader.read(try HoundServerResponse(json: json, raw: Data())).answer
        }
        let porch = try read("turn off the porch light")
        #expect(porch.handOff == .always && porch.action == nil && porch.transcript == "turn off the porch light")
        #expect(try read("what time is it").handOff == nil)
        // Not a phrase of this speaker's, nor a command it carries out: not for Home Assistant either.
        #expect(reader.notCarriedOutHere(try HoundServerResponse(json: AnswerBook().answer(transcript: "turn on the porch light",
                                                                                           requestInfo: info, voice: false), raw: Data()),
                                         query: "turn on the porch light")?.contains("hands to Home Assistant") == true)
    }

    @Test func whatTheSpeakerCannotDoMayBeHomeAssistants() throws {
        let reader = ClientCommandReader()
        let call: JSONValue = ["Format": "SoundHoundVoiceSearchResult", "Status": "OK", "NumToReturn": 1, "AllResults": [[
            "CommandKind": "PhoneCommand", "SpokenResponse": "Calling mom.", "SpokenResponseLong": "Calling mom.",
            "WrittenResponse": "Calling mom.", "WrittenResponseLong": "Calling mom."]], "Disambiguation": ["NumToShow": 1, "ChoiceData": [["Transcription": "call mom", "FormattedTranscription": "call mom", "ConfidenceScore": 0.9]]]]
        let read = reader.read(try HoundServerResponse(json: call, raw: Data())).answer
        #expect(read.text == SpeakerAnswer.cannotDoThat && read.handOff == .ifUnderstood)
        let nothing: JSONValue = ["Format": "SoundHoundVoiceSearchResult", "Status": "OK", "NumToReturn": 1, "AllResults": [[
            "CommandKind": "NoResultCommand", "SpokenResponse": "", "SpokenResponseLong": "Didn't get that!",
            "WrittenResponse": "Didn't get that!", "WrittenResponseLong": "Didn't get that!"]], "Disambiguation": ["NumToShow": 1, "ChoiceData": [["Transcription": "dim the hall", "FormattedTranscription": "dim the hall", "ConfidenceScore": 0.9]]]]
        #expect(reader.read(try HoundServerResponse(json: nothing, raw: Data())).answer.handOff == .ifUnderstood)
    }

    @Test func aCommandRunsAndItsFailureIsTold() async {
        let rig = await LoopRig()
        await rig.askQuestion()?.send(.answer(SpeakerAnswer(transcript: "good night", text: "Good night.", action: .run(command: "lights off"))))
        #expect(await rig.saw(.leds(.speaking)))
        #expect(rig.commands.started == ["lights off"])
        #expect(rig.speech.spoken.last == "Good night.")
        rig.commands.end(3)
        #expect(await rig.recorder.wait { activity in
            if case .deviceProblem(let p) = activity { p.message.contains("exit status 3") } else { false }
        })
        await rig.endSpeech()
        await rig.stop()
    }

    @Test func aPhraseCanMuteTheMicrophone() async {
        let store = FakeFlagStore()
        let rig = await LoopRig(hotPhrase: true, muteStore: store)
        await rig.askQuestion()?.send(.answer(SpeakerAnswer(transcript: "stop listening", text: "OK, I'm not listening.", action: .muteMicrophone)))
        #expect(await rig.saw(.muted(true)))
        #expect(rig.speech.spoken.last == "OK, I'm not listening.")
        await rig.endSpeech()
        #expect(await rig.saw(.leds(.muted)))
        #expect(rig.microphone.openStreams == 0)  // released
        await rig.stop()
    }

    /// The real runner: /bin/sh, the credentials not handed to it, the exit status reported.
    @Test func shellCommandsKeepTheKeyToThemselves() async throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cmd-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        // The environment the speaker would have (not this process's: the tests beside this one spawn the CLI).
        let environment = ProcessInfo.processInfo.environment.merging(["HOUNDIFY_CLIENT_KEY": "secret-key"]) { _, new in new }
        let status = await withCheckedContinuation { (done: CheckedContinuation<Result<Int32, DeviceProblem>, Never>) in
            ShellCommands(logger: Logger(label: "test"), baseEnvironment: environment).run("echo \"key=$HOUNDIFY_CLIENT_KEY\" > \(out); exit 4") { done.resume(returning: $0) }
        }
        #expect(status == .success(4))
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "key=\n")
    }
}

/// The weather card a screen draws, read from Houndify's weather nugget (Sources/HoundifyAnswers/WeatherCard.swift).
@Suite struct WeatherCardTests {
    func display(_ query: String, info: [String: JSONValue]) throws -> JSONValue? {
        let json = AnswerBook().answer(transcript: query, requestInfo: info.merging(["TimeZone": "UTC"]) { a, _ in a }, voice: false)
        return ClientCommandReader().read(try HoundServerResponse(json: json, raw: Data())).answer.display
    }

    /// The recorded Houndify answer (no position in the request): its conditions, temperatures and forecast.
    @Test func readsTheRecordedAnswersWeather() throws {
        let weather = try #require(try display("what's the weather", info: [:])?["Weather"])
        #expect(weather["location"] == "Prosper, Texas")
        #expect(weather["conditions"] == "Mostly cloudy")
        #expect(weather["key"] == "mostlycloudy")
        #expect(weather["temperature"] == "84 °F")
        #expect(weather["feels_like"] == "90 °F")
        #expect(weather["humidity_pct"] == 66)
        let day = try #require(weather["days"]?[0])
        #expect(day == ["date": "2019-08-27", "conditions": "Showers", "key": "rain", "high": "84 °F", "low": "72 °F",
                        "precipitation_pct": 65])
    }

    /// Asked with the speaker's position and metric units: the card is placed there and in degrees Celsius.
    @Test func placedAndInTheUnitsAskedFor() throws {
        let weather = try #require(try display("what's the weather", info: ["Latitude": 52.52, "Longitude": 13.4,
                                                                           "UnitPreference": "METRIC"])?["Weather"])
        #expect(weather["location"] == "52.52° N, 13.40° E")
        #expect(weather["temperature"] == "29 °C")
        #expect(weather["days"]?[0]?["low"] == "22 °C")
    }

    /// An answer without weather has no card; a nugget of another kind is not read as weather.
    @Test func noWeatherNoCard() {
        #expect(WeatherCard.read(["WrittenResponse": "It is noon."]) == nil)
        #expect(WeatherCard.read(["InformationNuggets": [["NuggetKind": "DateAndTime", "CurrentTemperature": ["Value": ["Value": 1]]]]]) == nil)
        #expect(WeatherCard.read(["NativeData": ["CurrentTemperature": ["Value": ["Value": 20.4, "WrittenUnits": "°C"]]]])
                == ["temperature": "20 °C"])
    }

    /// A temperature no thermometer reads (here 1e300, which trapped Int(_:)) is left off the card.
    @Test func anAbsurdTemperatureIsLeftOff() {
        #expect(WeatherCard.read(["NativeData": ["CurrentTemperature": ["Value": ["Value": .double(1e300), "WrittenUnits": "°C"]],
                                                 "FeelsLikeTemperature": ["Value": ["Value": .double(-1e300)]]]]) == nil)
    }
}
