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

    @Test func oneEventIsOneLineWithItsMetadata() {
        let line = JournalLogHandler.line(level: .warning, message: "first\nsecond\r\nthird", metadata: ["device": "plughw:1", "attempt": "2"])
        #expect(line == "<4>first\\nsecond\\nthird attempt=2 device=plughw:1")
        #expect(!line.contains("\n"))
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
        #expect(lines.withLock { $0 } == ["<3>signing with [redacted] failed key=[redacted]", "<7>nothing secret"])
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
