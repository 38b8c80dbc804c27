import CommandSupport
import AudioCore
import HotPhrase
public import SpeakerConfig

/// The config `path` (or the default) loaded; a mistake in it exits 78.
public func loadConfig(_ path: String?) throws -> SpeakerConfiguration {
    do { return try ConfigLoader.load(path: ConfigLoader.resolvePath(explicit: path)) } catch {
        throw CommandFailure(message: "\(error)", exitCode: 78)
    }
}

/// household.json in `option` (a folder), else in [hotphrase] household.
public func householdFile(_ option: String?, config: SpeakerConfiguration) throws -> String {
    let directory = option ?? config.hotphrase.household
    guard !directory.isEmpty else {
        throw CommandFailure(message: "no household folder: set [hotphrase] household or --household (there is no state directory: HOME is not set)",
                             exitCode: 78)
    }
    return (directory.hasSuffix("/") ? directory : directory + "/") + Household.fileName
}
