import Foundation
import Logging
import SpeakerCore
import Synchronization

/// The log lines of one test, with their levels.
final class LogLines: @unchecked Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    func append(_ line: String) { lines.withLock { $0.append(line) } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(sink: self) }
    }

    struct Handler: LogHandler {
        let sink: LogLines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            sink.append("\(event.level) \(event.message)")
        }
    }

    func wait(for fragment: String, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if all.contains(where: { $0.contains(fragment) }) { return true }
            usleep(20_000)
        }
        return all.contains(where: { $0.contains(fragment) })
    }
}

/// The running speaker as the bridge sees it: a snapshot that tests change, and the events sent to it.
final class FakeSpeaker: ControlledSpeaker {
    let current: Mutex<SpeakerSnapshot>
    init(_ snapshot: SpeakerSnapshot) { current = Mutex(snapshot) }
    func send(_ event: SpeakerEvent) {}
    var snapshot: SpeakerSnapshot { current.withLock { $0 } }
    func wakeScreen() {}
}
