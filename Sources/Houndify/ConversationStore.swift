public import FoundationEssentials
public import JSONKit
import Glibc
import Platform
import Synchronization

/// Keeps the conversation state between queries (docs/houndify-protocol.md, "Conversation state"), optionally in
/// a file so a restarted speaker continues the conversation. The file is written atomically (Platform's
/// AtomicFile) with mode 0600: the state may hold what the person asked.
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
        do throws(AtomicFile.Failure) { try AtomicFile.write(Array(value.asciiJSON().utf8), to: url.path) } catch {
            throw ConversationStoreError(path: error.path, reason: error.reason)
        }
    }
}

/// The conversation state could not be saved; names the file and the system's reason.
public struct ConversationStoreError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "cannot write the conversation state \(path): \(reason)" }
}
