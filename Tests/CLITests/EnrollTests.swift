import Foundation
import Testing
import TestSupport

/// `enroll` and `hotphrase --household` with the personal scorer's parity fixture (Tests/HotPhraseTests/Fixtures/
/// household: three espeak-ng takes of "OK Hound", a stream saying it once, a small negative bank) and the
/// speech-embedding test model.
@Suite(.ownThread) struct EnrollTests {
    static let fixtures = "Tests/HotPhraseTests/Fixtures/household"
    static let model = ["--model", "Tests/HotPhraseTests/Fixtures/embedding/test.hpm", "--bank", "\(fixtures)/bank.hpm"]

    /// A `run` fixture with the test model, a household folder of its own (`prefix` and a UUID; the caller removes
    /// it) whose share/ holds the fixture's bank as the installed negative-bank.hpm, and the control API on `control`.
    static func householdSpeaker(port: Int, control: Int, prefix: String) throws -> (RunFixture, household: String) {
        let household = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: household + "/share", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "\(fixtures)/bank.hpm", toPath: household + "/share/negative-bank.hpm")
        var fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: true, extraConfig: """
            model = "Tests/HotPhraseTests/Fixtures/embedding/test.hpm"
            household = "\(household)"
            [control]
            listen = "127.0.0.1:\(control)"
            """)
        fixture.extraEnvironment = ["HOUND_SPEAKER_HOTPHRASE_PATH": household + "/share"]
        return (fixture, household)
    }

    func temporaryDirectory() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-enroll-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func enrollKeepsTakesAndTheDetectorHearsThePhrase() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let takes = (1...3).map { "\(Self.fixtures)/take-\($0).wav" }
        // a steady tone for a second: nothing stands out of its own floor, so no speech
        let silence = "\(dir)/tone.wav"
        let sox = Process()
        sox.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
        sox.arguments = ["-n", "-r", "16000", "-c", "1", "-b", "16", silence, "synth", "1", "sine", "300", "vol", "0.3"]
        try sox.run()
        sox.waitUntilExit()

        let enrolled = try CLI.run(["enroll"] + takes + [silence, "--household", dir, "--phrase", "OK Hound"] + Self.model)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let lines = enrolled.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(enrolled.stdout)")
        for (line, take) in zip(lines, takes) { #expect(line.hasPrefix("\(take): kept ("), "\(line)") }
        #expect(lines.last == "\(silence): not kept: no speech found in it: say the phrase clearly, with a moment of quiet around it")
        #expect(enrolled.stderr.contains("3 of 4 takes kept; \"OK Hound\" has 3 templates in \(dir)/household.json"))
        // the three takes of the run train a personal head (docs/household.md, "The personal head"), kept beside them
        #expect(enrolled.stderr.contains("training a personal head on the 3 takes kept...\npersonal head trained and kept in \(dir)/household.json"),
                "\(enrolled.stderr)")
        func heads() throws -> [[String: Any]] {
            let saved = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/household.json"))) as? [String: Any])
            let phrase = try #require((saved["phrases"] as? [[String: Any]])?.first)
            return phrase["heads"] as? [[String: Any]] ?? []
        }
        let head = try #require(try heads().first)
        #expect(try heads().count == 1 && head["takes"] as? Int == 3 && (head["weights"] as? [Any])?.count == 12 * 96, "\(head.keys)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: "\(dir)/household.json")[.posixPermissions] as? Int)
        #expect(mode == 0o600)

        // The generic model held off (threshold 1: the test model's random head never reaches it): the templates
        // alone wake once, where the reference does (Fixtures/household/expected.json: 2.502 s, the step after its z peaks).
        let heard = try CLI.run(["hotphrase", "\(Self.fixtures)/stream.wav", "--household", dir, "--json", "--threshold", "1"] + Self.model)
        #expect(heard.status == 0, "\(heard.stderr)")
        let json = heard.stdout.split(separator: "\n")
        #expect(json.count == 1, "\(heard.stdout)")
        let line = try #require(try JSONSerialization.jsonObject(with: Data((json.first ?? "").utf8)) as? [String: Any])
        #expect(Set(line.keys) == ["time", "score", "phrase"])
        #expect(line["phrase"] as? String == "OK Hound")
        #expect(line["time"] as? Double == 2.502)
        #expect((line["score"] as? Double ?? 0) >= 3)

        let summary = try CLI.run(["hotphrase", "\(Self.fixtures)/stream.wav", "--household", dir, "--threshold", "1"] + Self.model)
        #expect(summary.stderr.contains("1 enrolled phrase, 1 personal head)"), "\(summary.stderr)")

        // without --household the command is as before: the generic model only
        let plain = try CLI.run(["hotphrase", "\(Self.fixtures)/stream.wav", "--json", "--threshold", "1", "--model",
                                 "Tests/HotPhraseTests/Fixtures/embedding/test.hpm"])
        #expect(plain.status == 0 && plain.stdout.isEmpty, "\(plain.stdout)")

        // a missing recording among good ones: the good one is kept and saved, the command exits 66 naming it
        let more = try CLI.run(["enroll", "\(dir)/missing.wav", takes[0], "--household", dir, "--phrase", "OK Hound"] + Self.model)
        #expect(more.status == 66)
        #expect(more.stdout.hasPrefix("\(dir)/missing.wav: not kept: "), "\(more.stdout)")
        #expect(more.stderr.contains("1 of 2 takes kept; \"OK Hound\" has 4 templates"), "\(more.stderr)")
        #expect(more.stderr.contains("no personal head: 1 take kept in this run, a head needs 3"), "\(more.stderr)")
        #expect(try heads().count == 1, "the head of the first run stays")
        let saved = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/household.json"))) as? [String: Any])
        let phrases = try #require(saved["phrases"] as? [[String: Any]])
        #expect((phrases.first?["templates"] as? [Any])?.count == 4)
    }

    /// `hotphrase --household DIR --keep-false-wakes` plays a household living with the recording: every wake is
    /// kept in DIR's file as the speaker keeps a false wake (0600, one negative per wake), applied from the next
    /// frame on, with the recording's own times; without --household it is refused by name.
    @Test func keepFalseWakesKeepsEachWakeAsAHouseholdNegative() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let takes = (1...3).map { "\(Self.fixtures)/take-\($0).wav" }
        #expect(try CLI.run(["enroll"] + takes + ["--household", dir, "--phrase", "OK Hound"] + Self.model).status == 0)
        // the stream three times over: "OK Hound" at about 2.0, 5.4 and 8.8 s
        let three = "\(dir)/three.wav"
        let sox = Process()
        sox.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
        sox.arguments = Array(repeating: "\(Self.fixtures)/stream.wav", count: 3) + [three]
        try sox.run()
        sox.waitUntilExit()
        func times(_ output: String) throws -> [Double] {
            try output.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])["time"] as? Double ?? -1
            }
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/household.json"))
        let plain = try CLI.run(["hotphrase", three, "--household", dir, "--json", "--threshold", "1"] + Self.model)
        let plainTimes = try times(plain.stdout)
        // the phrase in the first copy; the personal head (trained by enroll on the test model's random embedding)
        // also wakes between the copies, where the window spans one's end and the next one's speech
        #expect(plain.status == 0 && plainTimes.first == 2.502 && plainTimes.count >= 3, "\(plain.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(dir)/household.json")) == before, "a scan without the flag changes nothing")

        let kept = try CLI.run(["hotphrase", three, "--household", dir, "--json", "--threshold", "1", "--keep-false-wakes"] + Self.model)
        #expect(kept.status == 0, "\(kept.stderr)")
        let heard = try times(kept.stdout)
        #expect(heard.first == plainTimes.first, "the first wake is where it was without negatives")
        #expect(zip(heard, heard.dropFirst()).allSatisfy { $1 - $0 >= 2 } && heard.allSatisfy { $0 < 10.3 }, "\(heard)")
        let saved = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/household.json"))) as? [String: Any])
        #expect((saved["negatives"] as? [Any])?.count == heard.count, "\(saved.keys)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: "\(dir)/household.json")[.posixPermissions] as? Int)
        #expect(mode == 0o600)

        let alone = try CLI.run(["hotphrase", three, "--keep-false-wakes"] + Self.model)
        #expect(alone.status == 64)
        #expect(alone.stderr.contains("--keep-false-wakes needs --household DIR"), "\(alone.stderr)")
    }

    @Test func enrollExplainsWhatItCannotDo() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let take = "\(Self.fixtures)/take-1.wav"
        let formatOne = try CLI.run(["enroll", take, "--household", dir, "--model", "Tests/HotPhraseTests/Fixtures/ok-hound-v9.hpm", "--bank", "\(Self.fixtures)/bank.hpm"])
        #expect(formatOne.status == 66)
        #expect(formatOne.stderr.contains("enrollment needs the speech-embedding model"), "\(formatOne.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/household.json"))

        let noBank = try CLI.run(["enroll", take, "--household", dir, "--model", "Tests/HotPhraseTests/Fixtures/embedding/test.hpm",
                                  "--bank", "\(dir)/none.hpm"])
        #expect(noBank.status == 66)
        #expect(noBank.stderr.contains("negative bank \(dir)/none.hpm: no such file"), "\(noBank.stderr)")

        try Data("{\"version\": 1, \"phrases\": [".utf8).write(to: URL(fileURLWithPath: "\(dir)/household.json"))
        let damaged = try CLI.run(["enroll", take, "--household", dir] + Self.model)
        #expect(damaged.status == 1)
        #expect(damaged.stderr.contains("household file \(dir)/household.json: is damaged"), "\(damaged.stderr)")
        let detect = try CLI.run(["hotphrase", take, "--household", dir] + Self.model)
        #expect(detect.status == 66)
        #expect(detect.stderr.contains("household file \(dir)/household.json: is damaged"), "\(detect.stderr)")
    }
}

/// The household in a running speaker (issue #37, part 3): `ctl voices` lists what `enroll` taught it, an enroll
/// while it runs is taken at once (as `ctl reload-household` has it read again), `ctl forget` removes a phrase (one
/// not enrolled is refused by name).
@Suite(.ownThread) struct HouseholdCtlTests {
    @Test func ctlVoicesAndForgetOnARunningSpeaker() throws {
        let fixtures = EnrollTests.fixtures
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        // Household and bank in the fixture's folder: the bank as the installed share/hotphrase/negative-bank.hpm.
        let (fixture, household) = try EnrollTests.householdSpeaker(port: port, control: freePort(), prefix: "hs-voices")
        defer { try? FileManager.default.removeItem(atPath: household) }
        defer { fixture.remove() }
        let takes = (1...3).map { "\(fixtures)/take-\($0).wav" }
        let enrolled = try CLI.run(["enroll"] + takes + ["--household", household, "--phrase", "OK Hound"] + EnrollTests.model)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")

        let (process, _, output) = try fixture.startRun(hotPhrase: true)
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(output.wait(for: "\"to\":\"ready\""))
        func ctl(_ words: String...) throws -> CLI.Result { try CLI.run(["ctl"] + words + ["--config", fixture.config]) }

        let voices = try ctl("voices")
        #expect(voices.status == 0, "\(voices.stderr)")
        let lines = voices.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("\"OK Hound\": 3 takes (added ") == true, "\(voices.stdout)")
        #expect(lines.last == "personal scorer: active", "\(voices.stdout)")
        let status = try ctl("status")
        #expect(status.stdout.contains("\"household\":{") && status.stdout.contains("\"personal_active\":true"), "\(status.stdout)")

        // An enroll while it runs (the same config's household): told through the control API, taken at once.
        let more = try CLI.run(["enroll", takes[0], "--phrase", "OK Hound", "--config", fixture.config, "--bank", "\(fixtures)/bank.hpm"])
        #expect(more.status == 0 && more.stderr.contains("the running speaker uses the change now"), "\(more.stderr)")
        #expect(try ctl("voices").stdout.hasPrefix("\"OK Hound\": 4 takes"))
        // As enroll tells it, by hand: the file read again, and the household it has printed as `voices` prints it.
        let reloaded = try ctl("reload-household")
        #expect(reloaded.status == 0 && reloaded.stdout.hasPrefix("\"OK Hound\": 4 takes"), "\(reloaded.stdout)\(reloaded.stderr)")

        let unknown = try ctl("forget", "hey", "kitchen")
        #expect(unknown.status == 1 && unknown.stderr.contains("HTTP 409") && unknown.stderr.contains("has no phrase \"hey kitchen\""),
                "\(unknown.stderr)")
        #expect(try ctl("forget").status == 64)
        let forgot = try ctl("forget", "ok", "hound")
        #expect(forgot.status == 0, "\(forgot.stderr)")
        #expect(forgot.stdout.hasPrefix("no phrases enrolled") && forgot.stdout.hasSuffix("personal scorer: off (the generic model alone)\n"),
                "\(forgot.stdout)")
        #expect(try ctl("forget", "--negatives").status == 0)
        let file = try String(contentsOfFile: household + "/household.json", encoding: .utf8)
        #expect(file.contains("\"phrases\":[]") && file.contains("\"negatives\":[]"), "\(file.prefix(200))")
    }
}

/// The spoken enrollment on a running speaker (issue #37, "Teach it my voice"): `ctl enroll` runs it with the
/// speaker's own microphone path and speech. The microphone (an ALSA file PCM read at a microphone's pace) plays
/// the fixture's three espeak-ng takes of "OK Hound" with quiet between them, over and over.
@Suite(.ownThread) struct SpokenEnrollmentTests {
    struct Speaker {
        let fixture: RunFixture
        let household: String
        let process: Process
        let output: OutputWatcher
        func ctl(_ words: String...) throws -> CLI.Result { try CLI.run(["ctl"] + words + ["--config", fixture.config]) }
        func stop() {
            if process.isRunning { process.terminate(); process.waitUntilExit() }
            fixture.remove()
            try? FileManager.default.removeItem(atPath: household)
        }
    }

    /// `run` with the test model, the fixture's bank, an empty household and the control API, its microphone
    /// saying the takes (`quiet` seconds between them).
    func start(port: Int, quiet: Double = 2.5) throws -> Speaker {
        let (fixture, household) = try EnrollTests.householdSpeaker(port: port, control: freePort(), prefix: "hs-spoken")
        try Self.sayTakes(into: fixture.dir, quiet: quiet)
        let (process, _, output) = try fixture.startRun(hotPhrase: true)
        return Speaker(fixture: fixture, household: household, process: process, output: output)
    }

    /// The microphone file of `dir` (RunFixture's mic.raw): the three takes with `quiet` seconds around them,
    /// twelve times over, after twice the quiet (the test model's generic head at RunFixture's sensitivity may
    /// wake on a take, and a speaker woken before the enrollment starts is busy); `faintFirst`: a second of a faint
    /// tone (-50 dBFS) first.
    static func sayTakes(into dir: String, quiet: Double, faintFirst: Bool = false) throws {
        let silence = "\(dir)/quiet.wav", faint = "\(dir)/faint.wav"
        for arguments in [[silence, "trim", "0", "\(quiet)"], [faint, "synth", "1", "sine", "300", "vol", "0.003"]] {
            let sox = Process()
            sox.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
            sox.arguments = ["-n", "-r", "16000", "-c", "1", "-b", "16"] + arguments
            try sox.run()
            sox.waitUntilExit()
        }
        let takes = (1...3).map { "\(EnrollTests.fixtures)/take-\($0).wav" }
        let concat = Process()
        concat.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
        let lead: [String] = [silence, silence] + (faintFirst ? [faint] : [])
        let said: [String] = Array(repeating: takes.flatMap { [$0, silence] }, count: 12).flatMap { $0 }
        concat.arguments = lead + [silence] + said + ["-t", "raw", "\(dir)/mic.raw"]
        try concat.run()
        concat.waitUntilExit()
    }

    @Test func ctlEnrollTeachesTheRunningSpeakerThreeTakes() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let speaker = try start(port: port)
        defer { speaker.stop() }
        #expect(speaker.output.wait(for: "\"to\":\"ready\""))
        // The microphone opens just after ready: an enrollment asked before it is refused (nothing to record).
        #expect(speaker.output.wait(for: "\"status\":\"opened\""))

        let enrolled = try speaker.ctl("enroll", "--phrase", "OK Hound")
        #expect(enrolled.status == 0, "\(enrolled.stdout)\n\(enrolled.stderr)")
        let lines = enrolled.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "say \"OK Hound\" when asked", "\(enrolled.stdout)")
        #expect(lines.contains("take 1 of 3: listening"), "\(enrolled.stdout)")
        #expect(lines.last == "done: \"OK Hound\" has 3 new takes", "\(enrolled.stdout)")

        // The events: the prompts spoken, a listening LED per take, the progress, and no wake meanwhile.
        #expect(speaker.output.wait(for: "\"step\":\"done\""))
        let events = speaker.output.seen
        let session = try #require(events.range(of: "\"event\":\"enroll\"").map { events[$0.lowerBound...] })
        let during = session[..<(session.range(of: "\"step\":\"done\"")?.upperBound ?? session.endIndex)]
        #expect(during.contains("{\"event\":\"speech\",\"text\":\"Say OK Hound\"}"), "\(during)")
        #expect(during.contains("{\"event\":\"speech\",\"text\":\"Got it, 2 more\"}"))
        #expect(during.contains("{\"event\":\"speech\",\"text\":\"Got it, 1 more\"}"))
        #expect(during.components(separatedBy: "\"step\":\"listening\"").count - 1 >= 3)
        #expect(during.contains("{\"event\":\"leds\",\"show\":\"listening\"}"))
        #expect(!during.contains("\"event\":\"hotphrase\""), "the hot phrase woke the speaker while it enrolled")
        #expect(speaker.output.wait(for: "{\"event\":\"speech\",\"text\":\"Done. I know your voice now.\"}"))

        // Saved through the household as `enroll` saves, and listened with at once.
        let voices = try speaker.ctl("voices")
        #expect(voices.stdout.hasPrefix("\"OK Hound\": 3 takes (added "), "\(voices.stdout)")
        #expect(voices.stdout.contains("personal scorer: active"), "\(voices.stdout)")
        let status = try speaker.ctl("status")
        #expect(status.stdout.contains("\"enrollment\":{") && status.stdout.contains("\"step\":\"done\""), "\(status.stdout)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: "\(speaker.household)/household.json")[.posixPermissions] as? Int)
        #expect(mode == 0o600)

        // The session's personal head is trained on a thread of the speaker's after the save, then listened with.
        var withHead = voices
        for _ in 0..<360 where !withHead.stdout.contains("; 1 personal head") {  // up to 3 min: a debug build, a busy CI machine
            Thread.sleep(forTimeInterval: 0.5)
            withHead = try speaker.ctl("voices")
        }
        #expect(withHead.stdout.hasPrefix("\"OK Hound\": 3 takes (added ") && withHead.stdout.contains("; 1 personal head\n"), "\(withHead.stdout)")
        #expect(try speaker.ctl("status").stdout.contains("\"heads\":1"))
    }

    /// `hound-speaker enroll` with no recordings and a speaker running with the config: the speaker runs it.
    @Test func enrollWithoutRecordingsAsksTheRunningSpeaker() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let speaker = try start(port: port)
        defer { speaker.stop() }
        #expect(speaker.output.wait(for: "\"to\":\"ready\""))
        // The microphone opens just after ready: an enrollment asked before it is refused (nothing to record).
        #expect(speaker.output.wait(for: "\"status\":\"opened\""))
        let enrolled = try CLI.run(["enroll", "--phrase", "OK Hound", "--config", speaker.fixture.config])
        #expect(enrolled.status == 0, "\(enrolled.stdout)\n\(enrolled.stderr)")
        #expect(enrolled.stderr.contains("the speaker running with this config asks for the takes"), "\(enrolled.stderr)")
        #expect(enrolled.stdout.hasSuffix("done: \"OK Hound\" has 3 new takes\n"), "\(enrolled.stdout)")
        #expect(speaker.output.wait(for: "{\"event\":\"speech\",\"text\":\"Say OK Hound\"}"))
        #expect(try speaker.ctl("voices").stdout.hasPrefix("\"OK Hound\": 3 takes"))
    }

    /// With no speaker running, the same session runs in the command on the config's [audio] input and output.
    @Test func enrollWithoutRecordingsRunsOnItsOwn() throws {
        let fixtures = EnrollTests.fixtures
        let household = FileManager.default.temporaryDirectory.appendingPathComponent("hs-alone-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: household, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: household) }
        // No [control]: nothing to ask, so it runs here (the endpoint is never used).
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: 1, hotPhrase: true, extraConfig: """
            model = "Tests/HotPhraseTests/Fixtures/embedding/test.hpm"
            household = "\(household)"
            """)
        defer { fixture.remove() }
        try Self.sayTakes(into: fixture.dir, quiet: 2.5, faintFirst: true)
        let enrolled = try CLI.run(["enroll", "--phrase", "OK Hound", "--config", fixture.config, "--bank", "\(fixtures)/bank.hpm"],
                                   environment: fixture.environment(hotPhrase: true))
        #expect(enrolled.status == 0, "\(enrolled.stdout)\n\(enrolled.stderr)")
        let lines = enrolled.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "say \"OK Hound\" when asked", "\(enrolled.stdout)")
        #expect(lines.contains("take 1 of 3: listening") && lines.contains("take 2 of 3: listening"), "\(enrolled.stdout)")
        // The faint tone first: refused by the take checks, in their words, and asked for again.
        #expect(lines.contains("take 1 of 3: not kept: it is too quiet (loudest -53 dBFS, needs -40): speak closer to the microphone or louder"),
                "\(enrolled.stdout)")
        #expect(lines.last == "done: \"OK Hound\" has 3 new takes", "\(enrolled.stdout)")
        #expect(enrolled.stderr.contains("\"OK Hound\" saved in \(household)/household.json"), "\(enrolled.stderr)")
        // The prompts went to the config's output.
        #expect(fixture.spokenBytes > 16_000, "\(fixture.spokenBytes)")
        let saved = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(household)/household.json"))) as? [String: Any])
        let phrases = try #require(saved["phrases"] as? [[String: Any]])
        #expect(phrases.first?["text"] as? String == "OK Hound")
        #expect((phrases.first?["templates"] as? [Any])?.count == 3)
        // and the session's personal head, trained after the save
        #expect(enrolled.stderr.contains("personal head trained and kept in \(household)/household.json"), "\(enrolled.stderr)")
        #expect((phrases.first?["heads"] as? [Any])?.count == 1)
    }

    @Test func ctlEnrollSaysWhatItTakes() throws {
        for words in [["enroll", "--phrase"], ["enroll", "--phrase", " "], ["enroll", "hey", "kitchen"]] {
            let wrong = try CLI.run(["ctl"] + words)
            #expect(wrong.status == 64 && wrong.stderr.contains("enroll takes nothing (the hot phrase) or --phrase TEXT"), "\(words): \(wrong.stderr)")
        }
    }

    @Test func ctlStopAbortsItKeepingNothing() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let speaker = try start(port: port)
        defer { speaker.stop() }
        #expect(speaker.output.wait(for: "\"to\":\"ready\""))
        // The microphone opens just after ready: an enrollment asked before it is refused (nothing to record).
        #expect(speaker.output.wait(for: "\"status\":\"opened\""))

        let enroll = Process()
        enroll.executableURL = CLI.binary
        enroll.arguments = ["ctl", "enroll", "--phrase", "OK Hound", "--config", speaker.fixture.config]
        let out = Pipe(), err = Pipe()
        enroll.standardOutput = out
        enroll.standardError = err
        try enroll.run()
        #expect(speaker.output.wait(for: "\"step\":\"listening\""))
        let busy = try speaker.ctl("enroll")
        #expect(busy.status == 1 && busy.stderr.contains("an enrollment is under way already"), "\(busy.stderr)")
        #expect(try speaker.ctl("stop").status == 0)
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        enroll.waitUntilExit()
        #expect(enroll.terminationStatus == 1, "\(stdout)\n\(stderr)")
        #expect(stdout.hasSuffix("aborted: stopped (a long press, or the stop command)\n"), "\(stdout)")
        #expect(stderr.contains("nothing was kept"), "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(speaker.household)/household.json"))
        #expect(try speaker.ctl("voices").stdout.hasPrefix("no phrases enrolled"))
    }
}
