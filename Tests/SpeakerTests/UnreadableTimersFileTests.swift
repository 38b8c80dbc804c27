import FoundationEssentials
import Glibc
@testable import Assembly
import SpeakerCore
import Testing
import Timers

/// Issue #34: an intact timers file the service's user could not read (two timers and an alarm) was replaced by the
/// next timer set, and what it held was gone. It must be left as it is until it can be read.
///
/// The tests run as root, which reads any file; so the file is tried in a child process (an exit test) whose
/// effective user is nobody, as the service's own user would be. Real and saved user stay root, so that the child
/// can look at the file afterwards as it is on the disk.
@Suite struct UnreadableTimersFileTests {
    static let original = """
        {"version":1,"timers":[{"id":1,"name":"pasta","seconds":600,"endsAt":1800000300},\
        {"id":2,"name":"soup","seconds":900,"pausedRemaining":300}],\
        "alarms":[{"id":3,"name":"","minuteOfDay":420,"days":[1,2,3,4,5],"at":1800025200}]}
        """

    @Test func aTimersFileTheServiceCannotReadIsNeverReplacedAndIsKeptAsideOnceItCanBe() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            func check(_ ok: Bool, _ what: String) {
                guard !ok else { return }
                Issue.record("failed: \(what)")  // reported in the parent too
                exit(1)
            }
            func asRoot(_ body: () -> Void) {
                check(seteuid(0) == 0, "back to root")
                defer { check(seteuid(65534) == 0, "back to nobody") }
                body()
            }
            func read(_ path: String) -> String? {
                FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
            }
            let nobody: uid_t = 65534
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-unreadable-\(UUID().uuidString)").path
            check(mkdir(dir, 0o700) == 0 && chown(dir, nobody, gid_t(nobody)) == 0, "the state directory, the service's own")
            let path = dir + "/timers.json"
            // Root's, mode 0600: the service's user may not read it (a file restored from a backup as root).
            check(FileManager.default.createFile(atPath: path, contents: Data(Self.original.utf8), attributes: [.posixPermissions: 0o600]),
                  "the timers file")
            check(setegid(gid_t(nobody)) == 0 && seteuid(nobody) == 0, "to nobody")

            let file = TimerFile(path: path)
            let clocks = ClockReading(wall: 1_800_000_000, boot: 100, bootID: "b")
            var said: [String] = []
            do throws(DeviceProblem) {
                _ = try file.load(at: clocks)
                check(false, "an unreadable file loaded")
            } catch { said.append(error.message) }
            var book = TimerBook()
            _ = book.apply(.set(seconds: 300, name: "tea"), now: clocks.boot)
            do throws(DeviceProblem) {
                try file.save(book, at: clocks)
                said.append("")
            } catch { said.append(error.message) }
            asRoot {
                check(read(path) == Self.original, "the file is as it was")
                check((try? FileManager.default.contentsOfDirectory(atPath: dir)) == ["timers.json"], "nothing beside it")
            }
            check(said[0].contains("cannot read the timers file \(path) (Permission denied); it is left as it is"), said[0])
            check(said[1].contains("not saved: the timers file \(path) cannot be read (Permission denied), and is not replaced"), said[1])

            // Given to the service's user, it can be read: the next save keeps it aside, then saves.
            asRoot { check(chown(path, nobody, gid_t(nobody)) == 0, "chown") }
            do throws(DeviceProblem) { try file.save(book, at: clocks) } catch { check(false, "save once readable: \(error.message)") }
            asRoot {
                let asides = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix("timers.json.bad-") }
                check(asides.count == 1, "one copy kept aside: \(asides)")
                check(asides.first.flatMap { read(dir + "/" + $0) } == Self.original, "the copy is the file as it was")
                let saved = try? TimerFile(path: path).load(at: clocks).book
                check(saved?.timers.map(\.name) == ["tea"], "the timers of this run saved")
                try? FileManager.default.removeItem(atPath: dir)
            }
        }
        let said = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(!said.contains("failed:"), "\(said)")
    }
}
