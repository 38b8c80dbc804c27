import CommandSupport
import FoundationEssentials
import SpeakerConfig

/// `hound-speaker setup --import FILE`: settings from the SD card's boot partition into the config. No file is no
/// work (the unit runs this at every start). A refused file exits 78 with nothing changed and stays on the card; the
/// state directory keeps the sentence `run` says at start (ImportNotice).
public struct SetupImport: Sendable {
    public var file: String
    public var configPath: String?

    public init(file: String, configPath: String?) {
        self.file = file
        self.configPath = configPath
    }

    public func run() throws {
        let environment = ProcessInfo.processInfo.environment
        // The config that `run` would read; a new one at the system path when there is none yet.
        let config = ConfigLoader.resolvePath(explicit: configPath) ?? ConfigLoader.systemPath
        do throws(SettingsImport.Failure) {
            switch try SettingsImport.run(card: file, configPath: config) {
            case .nothing:
                break
            case .imported(let keys, let config):
                print("setup: \(config) now has \(keys.isEmpty ? "nothing new (the file was empty)" : keys.joined(separator: ", ")) from \(file); \(file) is wiped and removed")
            }
            ImportNotice.clear(environment: environment)
        } catch {
            ImportNotice.write(error, environment: environment)
            switch error {
            case .refused(let problem):
                throw CommandFailure(message: "setup: \(problem) (nothing was changed; the file stays on the card)", exitCode: 78)
            case .io(let problem, _):
                throw CommandFailure(message: "setup: \(problem)", exitCode: 1)
            }
        }
    }
}
