public import FoundationEssentials
public import JSONKit
import Glibc
import Synchronization

/// Keeps the conversation state between queries (docs/houndify-protocol.md, "Conversation state"), optionally in
/// a file so a restarted speaker continues the conversation. The file is written atomically (temporary file +
/// rename) with mode 0600: the state may hold what the person asked.
public final class ConversationStore: Sendable {
    private let state: Mutex<JSONValue?>
    public let fileURL: URL?

    /// Loads the state from `fileURL` if it exists. A corrupt file is not fatal: the conversation starts anew
    /// and the problem is reported through `loadProblem`.
    public init(fileURL: URL? = nil) {
        self.fileURL = fileURL
        var loaded: JSONValue? = nil
        var problem: String? = nil
        if let url = fileURL, let data = FileManager.default.contents(atPath: url.path) {
            do {
                let value = try JSONValue(parsing: data)
                if case .object = value { loaded = value } else if value != .null { problem = "\(url.path): not a JSON object" }
            } catch {
                problem = "\(url.path): not valid JSON, starting a new conversation"
            }
        }
        state = Mutex(loaded)
        loadProblem = problem
    }

    public let loadProblem: String?

    public var current: JSONValue? { state.withLock { $0 } }

    /// Takes the state from the result the speaker acted on. A result without one leaves the state as it was.
    public func update(from result: CommandResult) throws {
        guard let new = result.conversationState else { return }
        try set(new)
    }

    public func set(_ value: JSONValue) throws {
        state.withLock { $0 = value }
        try persist(value)
    }

    /// clearConversationState: the next query starts anew.
    public func clear() throws {
        state.withLock { $0 = nil }
        if let url = fileURL, FileManager.default.fileExists(atPath: url.path) {
            try FileManager.default.removeItem(at: url)
        }
    }

    private func persist(_ value: JSONValue) throws {
        guard let url = fileURL else { return }
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).tmp")
        let bytes = Data(value.asciiJSON().utf8)
        guard FileManager.default.createFile(atPath: temporary.path, contents: bytes,
                                             attributes: [.posixPermissions: 0o600]) else {
            throw ConversationStoreError(path: temporary.path, reason: String(cString: strerror(errno)))
        }
        if rename(temporary.path, url.path) != 0 {
            throw ConversationStoreError(path: url.path, reason: String(cString: strerror(errno)))
        }
    }
}

/// The conversation state could not be saved; names the file and the system's reason.
public struct ConversationStoreError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "cannot write the conversation state \(path): \(reason)" }
}
