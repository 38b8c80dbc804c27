import CSystemd
public import FoundationEssentials
import Glibc
public import Logging

/// Log entries for the journal. Where journald's socket is there (a service under systemd), each event is sent as
/// a structured entry: MESSAGE, PRIORITY, and every metadata key as a field of its own, `HOUND_SPEAKER_EVENT=timings`,
/// `HOUND_SPEAKER_FIRST_AUDIO_SENT_MS=12`, so `journalctl HOUND_SPEAKER_EVENT=timings -o json` and scripts read
/// fields instead of matching sentences. Otherwise (no socket) journald reads the service's stderr: one line per
/// event, led by the sd-daemon.h priority prefix (`<3>` for errors ...) so `journalctl -p warning` works, with no
/// timestamp, level word or label (the journal records the time, the priority and the unit itself), and no fields.
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
        send = nil
    }

    /// Structured entries through `send` (each entry's `FIELD=value` strings), journald's socket by default.
    public init(secrets: [String] = [], send: @escaping @Sendable ([String]) -> Void) {
        self.secrets = secrets.filter { !$0.isEmpty }
        self.write = JournalLogHandler.standardError
        self.send = send
    }

    private let send: (@Sendable ([String]) -> Void)?

    /// Whether journald's native socket is there to take structured entries.
    public static var nativeJournalAvailable: Bool { access("/run/systemd/journal/socket", W_OK) == 0 }

    /// One entry to journald's socket; false if it could not be sent.
    @discardableResult
    public static func sendToJournal(_ fields: [String]) -> Bool {
        // Copies that stay put while journald's library reads them (a field may hold any bytes but NUL).
        let copies = fields.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let iovecs = copies.map { iovec(iov_base: UnsafeMutableRawPointer($0), iov_len: $0.map { strlen($0) } ?? 0) }
        return sd_journal_sendv(iovecs, Int32(iovecs.count)) >= 0
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
        if let send {
            send(Self.fields(level: event.level, message: "\(event.message)", metadata: all, error: event.error, secrets: secrets))
        } else {
            write(Self.line(level: event.level, message: "\(event.message)", error: event.error, secrets: secrets))
        }
    }

    /// The entry's fields: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, and `HOUND_SPEAKER_KEY=value` for each metadata
    /// key (upper-cased, anything but letters and digits as `_`, as journald requires of field names).
    public static func fields(level: Logger.Level, message: String, metadata: Logger.Metadata = [:], error: (any Error)? = nil,
                              secrets: [String] = [], identifier: String = "hound-speaker") -> [String] {
        func redact(_ text: String) -> String { Self.redact(text, secrets) }
        var message = message
        if let error { message += " error=\(error)" }
        var out = ["MESSAGE=\(redact(message))", "PRIORITY=\(priorityNumber(level))", "SYSLOG_IDENTIFIER=\(identifier)"]
        for key in metadata.keys.sorted() {
            let name = String(key.uppercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
            out.append("HOUND_SPEAKER_\(name)=\(redact("\(metadata[key]!)"))")
        }
        return out
    }

    /// Each secret replaced by "[redacted]": the journal is kept on disk and readable by the `adm` group.
    static func redact(_ text: String, _ secrets: [String]) -> String {
        var text = text
        for secret in secrets where !secret.isEmpty { text = text.replacing(secret, with: "[redacted]") }
        return text
    }

    static func priorityNumber(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// `<N>message`, with newlines shown as `\n`: journald would make each line its own entry.
    public static func line(level: Logger.Level, message: String, error: (any Error)? = nil, secrets: [String] = []) -> String {
        var text = message
        if let error { text += " error=\(error)" }
        text = redact(text, secrets)
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
