import Foundation
import Logging
import Synchronization
import Testing
@testable import Systemd

@Suite struct JournalLogHandlerTests {
    @Test func eachLevelGetsItsSyslogPriorityAndNoTimestamp() {
        let expected: [(Logger.Level, String)] = [(.trace, "<7>"), (.debug, "<7>"), (.info, "<6>"), (.notice, "<5>"),
                                                  (.warning, "<4>"), (.error, "<3>"), (.critical, "<2>")]
        for (level, prefix) in expected {
            #expect(JournalLogHandler.line(level: level, message: "state ready -> recording") == "\(prefix)state ready -> recording")
        }
    }

    @Test func oneEventIsOneLine() {
        let line = JournalLogHandler.line(level: .warning, message: "first\nsecond\r\nthird")
        #expect(line == "<4>first\\nsecond\\nthird")
        #expect(!line.contains("\n"))
    }

    /// Under systemd every metadata key is a field of its own, so scripts read fields, not sentences.
    @Test func structuredEntriesCarryTheMetadataAsFields() {
        let entries = Mutex<[[String]]>([])
        let logger = Logger(label: "test") { _ in JournalLogHandler(send: { fields in entries.withLock { $0.append(fields) } }) }
        logger.notice("timings (ms from trigger): first audio sent 12", metadata: ["event": "timings", "first_audio_sent_ms": "12",
                                                                              "odd key-name": "x"])
        #expect(entries.withLock { $0 } == [["MESSAGE=timings (ms from trigger): first audio sent 12", "PRIORITY=5",
                                              "SYSLOG_IDENTIFIER=hound-speaker", "HOUND_SPEAKER_EVENT=timings",
                                              "HOUND_SPEAKER_FIRST_AUDIO_SENT_MS=12", "HOUND_SPEAKER_ODD_KEY_NAME=x"]])
    }

    @Test func secretsNeverReachTheJournal() {
        let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "test") { _ in
            JournalLogHandler(secrets: [key, ""]) { line in lines.withLock { $0.append(line) } }
        }
        logger.logLevel = .debug
        logger.error("signing with \(key) failed", metadata: ["key": "\(key)"])
        logger.debug("nothing secret")
        logger.trace("below the level")
        #expect(lines.withLock { $0 } == ["<3>signing with [redacted] failed", "<7>nothing secret"])
        let fields = JournalLogHandler.fields(level: .error, message: "signing with \(key) failed", metadata: ["key": "\(key)"], secrets: [key])
        #expect(fields.contains("MESSAGE=signing with [redacted] failed") && fields.contains("HOUND_SPEAKER_KEY=[redacted]"))
        #expect(!fields.joined().contains(key))
    }

    @Test func journalStreamMustNameThisStandardError() throws {
        var info = stat()
        #expect(fstat(STDERR_FILENO, &info) == 0)
        #expect(JournalStream.isStandardError(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]))
        #expect(!JournalStream.isStandardError(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino + 1)"]))
        #expect(!JournalStream.isStandardError(environment: ["JOURNAL_STREAM": "garbage"]))
        #expect(!JournalStream.isStandardError(environment: [:]))
    }
}
