import FoundationEssentials
import Glibc

/// ALSA `file` PCMs over the null PCM, in place of a sound card: a microphone that plays a raw recording (16-bit
/// samples, the rate asked) and a speaker that writes what it is given to a file. The demo, the benchmarks and the
/// tests all make their devices here, so the speaker meets real ALSA with no card.
public enum FileDevice: Sendable, Equatable {
    /// A capture PCM reading `reads`.
    case microphone(String, reads: String)
    /// A playback PCM writing to `writes` ("/dev/null" keeps nothing).
    case speaker(String, writes: String)

    /// The PCM's definition, as an asoundrc holds it.
    public var configuration: String {
        switch self {
        case .microphone(let name, let path):
            "pcm.\(name) {\n type file\n slave.pcm \"null\"\n file \"/dev/null\"\n infile \"\(path)\"\n format \"raw\"\n}\n"
        case .speaker(let name, let path):
            "pcm.\(name) {\n type file\n slave.pcm \"null\"\n file \"\(path)\"\n format \"raw\"\n}\n"
        }
    }

    /// Writes `devices` to `asoundrc`.
    public static func write(_ devices: [FileDevice], to asoundrc: String) throws {
        try Data(devices.map(\.configuration).joined().utf8).write(to: URL(fileURLWithPath: asoundrc))
    }

    /// Writes `devices` to `asoundrc` and has this process's libasound read it (with `alsoRead`, in order) after the
    /// configuration it already reads (ALSA_CONFIG_PATH, else the system's alsa.conf). libasound reads its files
    /// again when they change, so this works before or after the first ALSA call.
    public static func install(_ devices: [FileDevice], asoundrc: String, alsoRead: [String] = []) throws {
        try write(devices, to: asoundrc)
        let base = ProcessInfo.processInfo.environment["ALSA_CONFIG_PATH"] ?? "/usr/share/alsa/alsa.conf"
        setenv("ALSA_CONFIG_PATH", ([base, asoundrc] + alsoRead).joined(separator: ":"), 1)
    }
}
