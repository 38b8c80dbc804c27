public import CommandSupport
import DeviceCommands
public import Houndify
import DeviceAssembly
import HoundifyAssembly

extension AppContext {
    /// The assembly's Houndify client for this config (`HoundifyAssembly.client`), its failure as an exit
    /// code.
    public func houndifyClient(newConversation: Bool = false, forSpeaker: Bool = false) throws(CommandFailure) -> HoundifyClient {
        do throws(AssemblyError) {
            return try HoundifyAssembly.client(config, logger: logger, newConversation: newConversation, forSpeaker: forSpeaker)
        } catch { throw CommandFailure(error) }
    }
}
