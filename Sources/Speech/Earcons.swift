import Audio
public import AudioCore
import FoundationEssentials
import Glibc
import Platform

public enum Earcons {
    /// Where the shipped earcons are looked for, first match wins (`HOUND_SPEAKER_EARCON_PATH` first; the rule is
    /// ShippedFiles's, in Platform).
    public static var directories: [String] { ShippedFiles.directories(.earcons) }

    /// Loads every earcon at 16 kHz: the override's file if config names one, else the shipped one. A missing or
    /// unreadable file is an error that names it (a speaker that beeps nothing is no better than one that fails).
    public static func load(overrides: [Earcon: String] = [:]) throws(SpeechError) -> [Earcon: MonoAudio] {
        var sounds: [Earcon: MonoAudio] = [:]
        for earcon in Earcon.allCases {
            let path: String
            if let custom = overrides[earcon] {
                path = custom
            } else if let found = ShippedFiles.locate("\(earcon.rawValue).wav", in: .earcons) {
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
