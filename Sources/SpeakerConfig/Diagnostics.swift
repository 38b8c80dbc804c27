import FoundationEssentials
import Glibc
import HoundifyCore
public import Platform

extension SpeakerConfiguration {
    /// The doctor's checks of the settings themselves: the credentials and where they came from (never the key),
    /// the file holding them, the location, and where the conversation is kept.
    public func diagnostics(serviceUser: String) -> [Diagnostic] {
        var out = warnings.map { Diagnostic(.warn, $0) }
        out.append(.check(!houndify.clientID.isEmpty, "Houndify client ID (from \(clientIDSource))",
                          advice: "set [houndify] client_id or HOUNDIFY_CLIENT_ID (from the Houndify dashboard)"))
        out.append(.check(!houndify.clientKey.isEmpty, "Houndify client key (from \(clientKeySource))",
                          advice: "set [houndify] client_key or HOUNDIFY_CLIENT_KEY, in a file of mode 0600"))
        if houndify.clientID.isEmpty || houndify.clientKey.isEmpty, let listen = setup.listen {
            out.append(Diagnostic(.info, "without credentials the speaker starts in setup mode: the setup page on http://\(listen)/ (the device's NAME.local on a phone), with the code it says aloud"))
        }
        out += credentialsFileDiagnostics(serviceUser: serviceUser)
        out.append(.check(location.latitude != nil, "location set",
                          advice: "set [location] latitude and longitude so Houndify can answer local questions"))
        out.append(Diagnostic(.info, "conversation state: \(houndify.conversationStateFile.map { $0.isEmpty ? "in memory only" : $0 } ?? "in memory only")"))
        out.append(Diagnostic(.info, "timers kept in: \(speaker.timersFile.map { $0.isEmpty ? "memory only (lost on restart)" : $0 } ?? "memory only (lost on restart)")"))
        return out
    }

    /// The service runs as its own user (deploy/hound-speaker.service): a config holding the key must be private
    /// (load() already refuses one readable by everyone) and readable by that user.
    func credentialsFileDiagnostics(serviceUser: String) -> [Diagnostic] {
        guard let path, clientKeySource == path else {
            return clientKeySource == "none" ? [] : [Diagnostic(.info, "the client key comes from \(clientKeySource), not a file")]
        }
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        let mode = Int(info.st_mode) & 0o777
        var out = [Diagnostic.check(mode & 0o077 == 0, "credentials file \(path) is private (mode \(String(cFormat: "%03o", mode)))",
                                    advice: "chmod 600 \(path): it holds the client key")]
        if let user = getpwnam(serviceUser) {
            let uid = user.pointee.pw_uid, gid = user.pointee.pw_gid
            let readable = uid == info.st_uid ? (mode & 0o400 != 0) : (gid == info.st_gid && mode & 0o040 != 0)
            let owner = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "uid \(info.st_uid)"
            out.append(.check(readable, "the service user \(serviceUser) can read \(path) (owner \(owner))",
                              advice: "sudo chown \(serviceUser): \(path)   (keep mode 600)"))
        }
        return out
    }
}
