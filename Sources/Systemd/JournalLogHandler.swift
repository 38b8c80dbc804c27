import CSystemd
public import FoundationEssentials
import Glibc
public import Logging

/// Log lines for journald, which reads a service's stderr: one line per event, led by the sd-daemon.h priority
/// prefix (`<3>` for errors ...) so `journalctl -p warning` works, with no timestamp, level word or label (the
/// journal records the time, the priority and the unit itself).
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let secrets: [String]
    private let write: @Sendable (String) -> Void

    /// `secrets` are replaced wherever they would appear: the journal is kept on disk and readable by the `adm`
    /// group, so a client key slipping into a message must not land there.
    public init(secrets: [String] = [], write: @escaping @Sendable (String) -> Void = JournalLogHandler.standardError) {
        self.secrets = secrets.filter { !$0.isEmpty }
        self.write = write
    }

    /// One write(2) per line, so lines from different threads never interleave mid-line.
    public static let standardError: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        bytes.withUnsafeBytes { buffer in _ = Glibc.write(STDERR_FILENO, buffer.baseAddress, buffer.count) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let extra = event.metadata { all.merge(extra) { _, new in new } }
        write(Self.line(level: event.level, message: "\(event.message)", metadata: all, error: event.error, secrets: secrets))
    }

    /// `<N>message key=value ...`, with newlines shown as `\n`: journald would make each line its own entry.
    public static func line(level: Logger.Level, message: String, metadata: Logger.Metadata = [:], error: (any Error)? = nil,
                            secrets: [String] = []) -> String {
        var text = message
        for key in metadata.keys.sorted() { text += " \(key)=\(metadata[key]!)" }
        if let error { text += " error=\(error)" }
        for secret in secrets where !secret.isEmpty { text = text.replacing(secret, with: "[redacted]") }
        text = text.replacing("\r\n", with: "\\n").replacing("\n", with: "\\n")
            .replacing("\r", with: "\\r")
        return priority(level) + text
    }

    public static func priority(_ level: Logger.Level) -> String {
        switch level {
        case .trace, .debug: SD_DEBUG
        case .info: SD_INFO
        case .notice: SD_NOTICE
        case .warning: SD_WARNING
        case .error: SD_ERR
        case .critical: SD_CRIT
        }
    }
}

/// Whether stderr is connected to the journal: systemd sets JOURNAL_STREAM to "DEVICE:INODE" of the stream it
/// gave the service, and a program checks it against its own stderr (a redirect to a file or a pipe changes
/// them, and then plain lines with timestamps are wanted).
public enum JournalStream {
    public static func isStandardError(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }
}
