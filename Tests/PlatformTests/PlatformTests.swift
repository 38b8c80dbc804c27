import FoundationEssentials
import Glibc
@testable import Platform
import Synchronization
import Testing

@Suite struct ThreadTests {
    /// What `ps -L` / `top -H` show for a thread started with `name`, read from inside it.
    func nameSeenInside(_ name: String) -> String? {
        let seen = Mutex<String??>(nil)
        let done = Condition()
        OwnedThread.start(name: name) {
            let comm = (try? readText("/proc/thread-self/comm"))?.trimmed()
            done.lock()
            seen.withLock { $0 = .some(comm) }
            done.signal()
            done.unlock()
        }
        done.lock()
        while seen.withLock({ $0 }) == nil { done.wait() }
        done.unlock()
        return seen.withLock { $0 } ?? nil
    }

    @Test func ownedThreadRunsItsBodyUnderItsName() {
        #expect(nameSeenInside("hs-test-thread") == "hs-test-thread")
    }

    @Test func longNamesKeepTheirFirst15Bytes() {
        #expect(nameSeenInside("hs-a-very-long-thread-name") == "hs-a-very-long-")
    }

    @Test func lockKeepsCountsExactAcrossThreads() {
        /// @unchecked: what the test asks is whether the lock alone keeps this count exact.
        final class Count: @unchecked Sendable { var value = 0 }
        let lock = Lock()
        let count = Count()
        let finished = Mutex(0)
        let done = Condition()
        for _ in 0..<4 {
            OwnedThread.start(name: "hs-count") {
                for _ in 0..<10_000 { lock.withLock { count.value += 1 } }
                done.lock()
                finished.withLock { $0 += 1 }
                done.signal()
                done.unlock()
            }
        }
        done.lock()
        while finished.withLock({ $0 }) < 4 { done.wait() }
        done.unlock()
        #expect(lock.withLock { count.value } == 40_000)
    }

    @Test func timedWaitTimesOutWhenNobodySignals() {
        let condition = Condition()
        condition.lock()
        let signalled = condition.wait(seconds: 0.05)
        condition.unlock()
        #expect(!signalled)
    }

    @Test func timedWaitReturnsEarlyWhenSignalled() {
        let condition = Condition()
        let ready = Mutex(false)
        OwnedThread.start(name: "hs-signal") {
            condition.lock()
            ready.withLock { $0 = true }
            condition.signal()
            condition.unlock()
        }
        condition.lock()
        var signalled = true
        // A 60 s limit that a signal ends: a timeout here would mean the signal was lost.
        while !ready.withLock({ $0 }) && signalled { signalled = condition.wait(seconds: 60) }
        condition.unlock()
        #expect(signalled && ready.withLock { $0 })
    }
}

@Suite struct TextTests {
    @Test func cFormatFormatsLikePrintf() {
        #expect(String(cFormat: "%.3f", 1.0 / 3) == "0.333")
        #expect(String(cFormat: "mode %03o", 0o640 as UInt32) == "mode 640")
        #expect(String(cFormat: "%02x%02x", 10 as UInt8, 255 as UInt8) == "0aff")
        #expect(String(cFormat: "%d detections in %.1f s", 3, 12.25) == "3 detections in 12.2 s")
        #expect(String(cFormat: "no arguments") == "no arguments")
        #expect(String(cFormat: "") == "")
        // Longer than any fixed buffer: measured first, then written.
        #expect(String(cFormat: "%0500d", 7).count == 500)
    }

    @Test func trimmedRemovesOnlyTheEnds() {
        #expect("  a b \t\n".trimmed() == "a b")
        #expect(" a \n".trimmed(.whitespaces) == "a \n")
        #expect("[table] ".trimmed(TrimmedCharacters(charactersIn: "[] ")) == "table")
        #expect("   ".trimmed() == "")
        #expect("".trimmed() == "")
    }
}

@Suite struct SystemTimeZoneTests {
    @Test func knownZonesAreTZifFilesOfTheTzDatabase() {
        #expect(SystemTimeZone.isKnown("Europe/Paris"))
        #expect(SystemTimeZone.isKnown("UTC"))
        #expect(!SystemTimeZone.isKnown("Mars/Olympus"))
        #expect(!SystemTimeZone.isKnown("Europe"))             // a directory, not a zone
        #expect(!SystemTimeZone.isKnown("../../../etc/passwd"))
        #expect(!SystemTimeZone.isKnown("/etc/localtime"))
        #expect(!SystemTimeZone.isKnown(""))
        #expect(!SystemTimeZone.isKnown("zone.tab"))           // a file of the database that is not a zone
    }

    @Test func tzInTheEnvironmentWins() {
        #expect(SystemTimeZone.identifier(environment: "Asia/Tokyo") == "Asia/Tokyo")
        #expect(SystemTimeZone.identifier(environment: ":America/New_York") == "America/New_York")
        #expect(SystemTimeZone.identifier(environment: "/usr/share/zoneinfo/Europe/Paris") == "Europe/Paris")
    }

    @Test func theLocaltimeLinkThenTheTimezoneFileThenUTC() throws {
        let dir = try temporaryDirectory()
        defer { _ = system("rm -rf '\(dir)'") }
        let link = dir + "/localtime", file = dir + "/timezone"
        #expect(symlink("/usr/share/zoneinfo/Europe/Lisbon", link) == 0)
        try writeText(file, "Asia/Kolkata\n")
        // A TZ that names no zone (a POSIX rule string) falls through to the link, as timedatectl reads it.
        #expect(SystemTimeZone.identifier(environment: "Nowhere/Atlantis", localtime: link, timezoneFile: file) == "Europe/Lisbon")
        #expect(SystemTimeZone.identifier(environment: "", localtime: dir + "/missing", timezoneFile: file) == "Asia/Kolkata")
        #expect(SystemTimeZone.identifier(environment: "", localtime: dir + "/missing", timezoneFile: dir + "/missing") == "UTC")
    }
}

func temporaryDirectory() throws -> String {
    var template = Array("/tmp/hs-platform-XXXXXX".utf8CString)
    guard let path = mkdtemp(&template) else { throw TestError(text: "mkdtemp failed") }
    return String(cString: path)
}

func writeText(_ path: String, _ text: String) throws {
    guard let file = fopen(path, "w") else { throw TestError(text: "cannot write \(path)") }
    fputs(text, file)
    fclose(file)
}

func readText(_ path: String) throws -> String {
    guard let file = fopen(path, "r") else { throw TestError(text: "cannot read \(path)") }
    defer { fclose(file) }
    var out = "", line = [CChar](repeating: 0, count: 4096)
    while fgets(&line, Int32(line.count), file) != nil {
        out += String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    return out
}

struct TestError: Error { let text: String }

/// The one locator for shipped files: from the test binary (inside the source tree's .build) it finds the tree's
/// own share/ and board/ (CLITests run the demo from another working directory).
@Suite struct ShippedFilesTests {
    static let root: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()

    @Test func findsTheSourceTreesFiles() throws {
        #expect(ShippedFiles.locate("start_listening.wav", in: .earcons) == "\(Self.root)/share/earcons/start_listening.wav")
        #expect(ShippedFiles.locate("ok-hound.hpm", in: .hotPhrase) == "\(Self.root)/share/hotphrase/ok-hound.hpm")
        #expect(ShippedFiles.locate("simulated.toml", in: .boards) == "\(Self.root)/board/simulated.toml")
        #expect(ShippedFiles.locate("no-such-file.wav", in: .earcons) == nil)
        // The owner's files win over the shipped ones, the installed ones come last.
        let dirs = ShippedFiles.directories(.hotPhrase)
        #expect(dirs.firstIndex(of: "/etc/hound-speaker/hotphrase")! < dirs.firstIndex(of: "\(Self.root)/share/hotphrase")!)
        #expect(dirs.last == "/usr/share/hound-speaker/hotphrase")
    }

    @Test func theEnvironmentComesFirst() {
        setenv("HOUND_SPEAKER_EARCON_PATH", "/a:/b", 1)
        defer { unsetenv("HOUND_SPEAKER_EARCON_PATH") }
        #expect(Array(ShippedFiles.directories(.earcons).prefix(3)) == ["/a", "/b", "/etc/hound-speaker/earcons"])
    }
}
