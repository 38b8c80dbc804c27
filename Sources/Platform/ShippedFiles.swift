import FoundationEssentials
import Glibc

/// The one rule for finding what the speaker ships beside its binary (earcons, the hot-phrase model, board
/// profiles, the demo recording, the local service's executable), from any working directory:
/// 1. the directories of an environment variable (colon-separated), for tests and unusual installs;
/// 2. `/etc/hound-speaker/KIND`, the owner's own files, which win over the shipped ones;
/// 3. next to the executable: walking up from its directory, `PREFIX/share/hound-speaker/KIND` (installed under
///    any prefix: `/usr/bin` finds `/usr/share/hound-speaker`) or, in the source tree (a directory holding
///    Package.swift, as `.build/.../debug/hound-speaker` has), its own folder for the kind;
/// 4. `/usr/share/hound-speaker/KIND`.
public enum ShippedFiles {
    public struct Kind: Sendable {
        /// The folder under /etc/hound-speaker and share/hound-speaker.
        public var installed: String
        /// The folder in the source tree, relative to its root.
        public var source: String
        /// The environment variable that adds directories in front.
        public var environment: String?

        public init(installed: String, source: String, environment: String? = nil) {
            self.installed = installed
            self.source = source
            self.environment = environment
        }

        public static let earcons = Kind(installed: "earcons", source: "share/earcons", environment: "HOUND_SPEAKER_EARCON_PATH")
        public static let hotPhrase = Kind(installed: "hotphrase", source: "share/hotphrase", environment: "HOUND_SPEAKER_HOTPHRASE_PATH")
        public static let boards = Kind(installed: "board", source: "board", environment: "HOUND_SPEAKER_BOARD_PATH")
        public static let demo = Kind(installed: "demo", source: "share/demo")
        /// The kiosk page served by the control API.
        public static let kiosk = Kind(installed: "kiosk", source: "share/kiosk", environment: "HOUND_SPEAKER_KIOSK_PATH")
    }

    /// Where files of `kind` are looked for, first match wins.
    public static func directories(_ kind: Kind) -> [String] {
        var out: [String] = []
        if let name = kind.environment, let value = ProcessInfo.processInfo.environment[name] {
            out += value.split(separator: ":").map(String.init)
        }
        out.append("/etc/hound-speaker/\(kind.installed)")
        if let found = besideExecutable(kind) { out.append(found) }
        let system = "/usr/share/hound-speaker/\(kind.installed)"
        if !out.contains(system) { out.append(system) }
        return out
    }

    /// The first existing `name` in the directories of `kind`.
    public static func locate(_ name: String, in kind: Kind) -> String? {
        directories(kind).map { "\($0)/\(name)" }.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Another program of the speaker's, e.g. the local Houndify service: beside this one (same directory, as
    /// `swift build` leaves them) or in `PREFIX/libexec/hound-speaker` (as the Debian package installs it beside
    /// `PREFIX/bin/hound-speaker`).
    public static func siblingExecutable(_ name: String) -> String? {
        guard let directory = executableDirectory else { return nil }
        let parent = directory.lastIndex(of: "/").map { String(directory[..<$0]) } ?? ""
        return ["\(directory)/\(name)", "\(parent)/libexec/hound-speaker/\(name)"].first { access($0, X_OK) == 0 }
    }

    /// The directory of the running executable, symlinks resolved (`/proc/self/exe`).
    public static var executableDirectory: String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func besideExecutable(_ kind: Kind) -> String? {
        guard var directory = executableDirectory else { return nil }
        while true {
            let installed = "\(directory)/share/hound-speaker/\(kind.installed)"
            if FileManager.default.fileExists(atPath: installed) { return installed }
            if FileManager.default.fileExists(atPath: "\(directory)/Package.swift") {
                return "\(directory)/\(kind.source)"
            }
            guard directory != "/", let slash = directory.lastIndex(of: "/") else { return nil }
            directory = slash == directory.startIndex ? "/" : String(directory[..<slash])
        }
    }
}
