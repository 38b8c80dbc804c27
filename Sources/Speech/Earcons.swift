public import Audio
import FoundationEssentials
import Glibc

/// The short sounds of seed 001's earcon types, shipped as WAVs in share/earcons (made by tools/make-earcons.sh)
/// and replaceable in config (`[audio] earcons`).
public enum Earcon: String, Sendable, CaseIterable {
    case startListening = "start_listening"
    case stopListening = "stop_listening"
    case cancel
    case error
}

public enum Earcons {
    /// Where the shipped earcons are looked for, first match wins: `HOUND_SPEAKER_EARCON_PATH` (colon-separated),
    /// /etc/hound-speaker/earcons, /usr/share/hound-speaker/earcons, ./share/earcons.
    public static var directories: [String] {
        let extra = ProcessInfo.processInfo.environment["HOUND_SPEAKER_EARCON_PATH"]?.split(separator: ":").map(String.init) ?? []
        return extra + ["/etc/hound-speaker/earcons", "/usr/share/hound-speaker/earcons", "share/earcons"]
    }

    /// Loads every earcon at 16 kHz: the override's file if config names one, else the shipped one. A missing or
    /// unreadable file is an error that names it (a speaker that beeps nothing is no better than one that fails).
    public static func load(overrides: [String: String] = [:]) throws(SpeechError) -> [Earcon: MonoAudio] {
        var sounds: [Earcon: MonoAudio] = [:]
        for earcon in Earcon.allCases {
            let path: String
            if let custom = overrides[earcon.rawValue] {
                path = custom
            } else if let found = directories.map({ "\($0)/\(earcon.rawValue).wav" }).first(where: { FileManager.default.fileExists(atPath: $0) }) {
                path = found
            } else {
                throw SpeechError("earcon \(earcon.rawValue).wav not found in \(directories.joined(separator: ", ")) (install share/earcons, or set [audio] earcons)")
            }
            do throws(AudioFileError) { sounds[earcon] = try AudioFile.readMono(path: path) } catch {
                throw SpeechError("earcon \(earcon.rawValue): \(error.description)")
            }
        }
        return sounds
    }
}
