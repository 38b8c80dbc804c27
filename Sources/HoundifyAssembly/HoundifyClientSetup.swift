public import DeviceAssembly
import FoundationEssentials
public import Houndify
public import Logging
public import SpeakerConfig
import HoundifyCore

/// The Houndify client made from the settings: for the speaker, and for `text` and `voice`, which need nothing else
/// of it.
public enum HoundifyAssembly {
    /// The Houndify client, with the conversation kept in the configured state file. `forSpeaker`: the speaker
    /// carries out client actions and keeps the state of the branch it took.
    public static func client(_ config: SpeakerConfiguration, logger: Logger, newConversation: Bool = false,
                                      forSpeaker: Bool = false) throws(AssemblyError) -> HoundifyClient {
        var settings: HoundifyClientConfiguration
        do { settings = try config.houndifyClientConfiguration() } catch {
            throw AssemblyError(.configuration, error.description)
        }
        settings.callerKeepsActionState = forSpeaker
        let file = config.houndify.conversationStateFile ?? ""
        let store = ConversationStore(fileURL: file.isEmpty ? nil : URL(fileURLWithPath: file))
        if let problem = store.loadProblem { logger.warning("conversation state: \(problem)") }
        if newConversation {
            do { try store.clear() } catch { logger.warning("conversation state: \(error)") }
        }
        do {
            return try HoundifyClient(configuration: settings, conversation: store, logger: logger)
        } catch {
            throw AssemblyError(.configuration, "\(config.path ?? "config"): [houndify] client_key: \(error)")
        }
    }
}
