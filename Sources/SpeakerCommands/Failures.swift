import DeviceCommands
import Assembly
public import CommandSupport
import DeviceAssembly
public import Houndify

extension AppContext {
    /// The assembly's Houndify client for this config (`SpeakerAssembly.houndifyClient`), its failure as an exit
    /// code.
    public func houndifyClient(newConversation: Bool = false, forSpeaker: Bool = false) throws(CommandFailure) -> HoundifyClient {
        do throws(AssemblyError) {
            return try SpeakerAssembly.houndifyClient(config, logger: logger, newConversation: newConversation, forSpeaker: forSpeaker)
        } catch { throw CommandFailure(error) }
    }
}
