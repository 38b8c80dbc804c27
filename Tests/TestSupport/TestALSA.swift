import Foundation
import Audio

/// One ALSA configuration for the whole test process (every test target runs in it, and libasound reads its
/// configuration per process): the system's, plus `file` PCMs over the null PCM, so no sound card is needed.
/// Playback PCMs write what is played to a raw file; capture PCMs read a raw fixture the test writes first.
public enum TestALSA {
    public static let directory: String = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-alsa-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try? Data(lateSpeaker(present: false, dir: dir).utf8).write(to: URL(fileURLWithPath: "\(dir)/late-speaker.conf"))
        try? Data("# PCMs on a kernel sound card, written by a test that has one (defineCardPCMs)\n".utf8)
            .write(to: URL(fileURLWithPath: "\(dir)/cards.conf"))
        // The system's configuration only (not whatever the environment had), then these devices.
        setenv("ALSA_CONFIG_PATH", "/usr/share/alsa/alsa.conf", 1)
        try? FileDevice.install(playbackDevices.map { .speaker($0, writes: "\(dir)/\($0).raw") }
                                    + captureDevices.map { .microphone($0, reads: "\(dir)/\($0).raw") },
                                asoundrc: "\(dir)/asoundrc", alsoRead: ["\(dir)/late-speaker.conf", "\(dir)/cards.conf"])
        return dir
    }()

    /// `test_late_speaker`: a sound card that is not there (its open fails, as an unplugged USB speaker's does)
    /// until `plugInLateSpeaker()`, which makes it a file PCM writing `<directory>/test_late_speaker.raw`. libasound
    /// reads its configuration files again when they change, so the running process sees it appear.
    static func lateSpeaker(present: Bool, dir: String) -> String {
        present
            ? "pcm.test_late_speaker { type file slave.pcm \"null\" file \"\(dir)/test_late_speaker.raw\" format \"raw\" }\n"
            : "pcm.test_late_speaker { type hw card \"HoundSpeakerNotPluggedIn\" }\n"
    }

    public static func plugInLateSpeaker() throws {
        // A new file (a new inode), not the old one rewritten: libasound notices a change by inode and mtime in seconds.
        try Data(lateSpeaker(present: true, dir: directory).utf8).write(to: URL(fileURLWithPath: "\(directory)/late-speaker.conf"), options: .atomic)
    }

    /// Defines PCMs over a kernel sound card (`text`, asoundrc syntax) for a test that found one; read after the
    /// file PCMs. A new file each time, which libasound notices (as `plugInLateSpeaker`).
    public static func defineCardPCMs(_ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: "\(directory)/cards.conf"), options: .atomic)
    }

    /// Capture PCMs, each reading `<directory>/<name>.raw`.
    public static let captureDevices = ["test_mic_a", "test_mic_b", "test_mic_c", "test_mic_d", "test_mic_e", "test_loop_mic", "test_late_mic", "test_echo_mic"]

    /// Playback PCMs, each writing `<directory>/<name>.raw`.
    public static let playbackDevices = ["test_speaker", "test_loop_speaker", "test_earcon_speaker", "test_echo_speaker"]

    /// Where the playback PCM `test_speaker` writes.
    public static var speakerFile: String { outputFile("test_speaker") }

    /// The file a playback PCM writes.
    public static func outputFile(_ device: String) -> String { _ = directory; return "\(directory)/\(device).raw" }

    /// The fixture file a capture PCM reads.
    public static func inputFile(_ device: String) -> String { _ = directory; return "\(directory)/\(device).raw" }
}

/// Runs sox (a test dependency) and fails loudly if it fails.
public func runSox(_ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
    process.arguments = arguments
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw SoxError(arguments: arguments) }
}

public struct SoxError: Error, CustomStringConvertible {
    public var arguments: [String]
    public var description: String { "sox \(arguments.joined(separator: " ")) failed" }
}

/// Reads a raw file of 16-bit little-endian samples.
public func readRawInt16(_ path: String) throws -> [Int16] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
}

/// Has flite (a test dependency) say `text` into the WAV at `path` in its `voice` (slt: US English, female), and
/// fails loudly if it fails. The offline recogniser's tests speak with it: it passes the recogniser's check of what
/// it heard as a person's voice does, where espeak-ng's formant voices mostly do not.
public func fliteWAV(_ text: String, to path: String, voice: String = "slt") throws {
    let flite = Process()
    flite.executableURL = URL(fileURLWithPath: "/usr/bin/flite")
    flite.arguments = ["-voice", voice, "-t", text, "-o", path]
    flite.standardError = FileHandle.nullDevice
    try flite.run()
    flite.waitUntilExit()
    guard flite.terminationStatus == 0 else { throw SoxError(arguments: ["(flite)", "-voice", voice, "-o", path, text]) }
}

/// Has espeak-ng (a test dependency) say `text` into the WAV at `path`, and fails loudly if it fails.
public func espeakWAV(_ text: String, to path: String, voice: String? = nil) throws {
    let espeak = Process()
    espeak.executableURL = URL(fileURLWithPath: "/usr/bin/espeak-ng")
    espeak.arguments = (voice.map { ["-v", $0] } ?? []) + ["-w", path, text]
    espeak.standardError = FileHandle.nullDevice
    try espeak.run()
    espeak.waitUntilExit()
    guard espeak.terminationStatus == 0 else { throw SoxError(arguments: ["(espeak-ng)", "-w", path, text]) }
}
