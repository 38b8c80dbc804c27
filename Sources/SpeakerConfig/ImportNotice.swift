import Glibc
import Platform

/// What the last `setup --import` could not do, kept in the state directory for `run` to say at start (the unit runs
/// the import before the speaker, as root, and the speaker cannot read the card's reasons any other way). Line one is
/// the sentence to say; line two the error, for the log. Removed by an import that succeeds or finds no file.
public enum ImportNotice {
    public static let fileName = "card-import-problem.txt"

    public static func path(_ environment: [String: String]) -> String? {
        ConfigLoader.stateDirectory(environment).map { "\($0)/\(fileName)" }
    }

    /// The sentence for a refused card file.
    public static func sentence(_ failure: SettingsImport.Failure) -> String {
        switch failure {
        case .refused(let error):
            var where_ = ""
            if let line = error.line { where_ += " on line \(line)" }
            if let key = error.key { where_ += ", at \(spoken(key))" }
            return "The settings file on the SD card has a mistake\(where_), so it was not used. It is still on the card; the speaker's log says what is wrong."
        case .io(_, let saved):
            return saved
                ? "The settings from the SD card were saved, but their file could not be removed from the card. Please delete it: anyone can read the card."
                : "The settings file on the SD card could not be used. The speaker's log says why."
        }
    }

    /// "[houndify] client_key" as words: "houndify client key".
    static func spoken(_ key: String) -> String {
        String(key.map { "[]_.".contains($0) ? " " : $0 }).split(separator: " ").joined(separator: " ")
    }

    public static func write(_ failure: SettingsImport.Failure, environment: [String: String]) {
        guard let path = path(environment) else { return }
        let text = sentence(failure) + "\n" + "\(failure)".replacing("\n", with: " ") + "\n"
        // Readable by the speaker's user: the import runs as root, the speaker does not. It holds no secret (the
        // errors name keys and lines, never a key's value).
        try? AtomicFile.write(Array(text.utf8), to: path, mode: 0o644)
    }

    public static func clear(environment: [String: String]) {
        guard let path = path(environment) else { return }
        unlink(path)
    }

    /// The sentence and the detail, if the last import left a problem.
    public static func read(environment: [String: String]) -> (sentence: String, detail: String)? {
        guard let path = path(environment), case .bytes(let bytes) = AtomicFile.read(path, limit: 4096),
              let text = String(validating: bytes, as: UTF8.self) else { return nil }
        let lines = text.split(separator: "\n", maxSplits: 1).map { String($0).trimmed() }
        guard let sentence = lines.first, !sentence.isEmpty else { return nil }
        return (sentence, lines.count > 1 ? lines[1] : "")
    }
}
