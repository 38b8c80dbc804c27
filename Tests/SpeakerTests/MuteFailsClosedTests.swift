import BoardCore
import FoundationEssentials
@testable import Assembly
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing

/// Mute is privacy, so it fails closed (issue #34: a damaged mute file, or a mute a full disk kept from being
/// saved, and after a restart the microphone and the hot phrase were on).
@Suite struct MuteFailsClosedTests {
    let files = StateFileTests()

    @Test func theMuteFileFailsClosed() throws {
        let dir = files.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/muted"
        let file = FlagFile(path: path)
        #expect(try file.load() == false)  // never saved: a new speaker
        for damaged in ["tru", "", "\n", "yes", "TRUE", "true false", String(repeating: "true", count: 100), "\u{FF}"] {
            files.write(damaged, to: path)
            #expect(throws: DeviceProblem.self, "\(damaged)") { try file.load() }
        }
        files.write("true\n", to: path)
        #expect(try file.load() == true)
        files.write(" false \n", to: path)
        #expect(try file.load() == false)
        // Something there that cannot be read is not "never saved".
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(throws: DeviceProblem.self) { try file.load() }
        files.write("x", to: dir + "/muted-parent")  // a path through a file: ENOTDIR, not "no such file"
        #expect(throws: DeviceProblem.self) { try FlagFile(path: dir + "/muted-parent/muted").load() }
    }

    /// The problem `body` threw, or nil.
    func failure(_ body: () throws -> Void) -> DeviceProblem? {
        do { try body() } catch { return error as? DeviceProblem }
        return nil
    }

    /// Muting when the new file cannot be written (here its temporary file cannot be made; on a Pi, a full disk):
    /// the old "false" must not survive, so the file is emptied, which reads as unknown, which starts muted.
    @Test func aMuteThatCannotBeSavedEmptiesTheFileSoARestartIsMuted() throws {
        let dir = files.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/muted"
        let file = FlagFile(path: path)
        try file.save(false)
        try FileManager.default.createDirectory(atPath: dir + "/.muted.tmp/blocker", withIntermediateDirectories: true)
        #expect(failure { try file.save(true) }?.message.hasSuffix("; the mute file is emptied instead, so a restart starts muted") == true)
        #expect(files.read(path) == "")
        #expect(throws: DeviceProblem.self) { try file.load() }  // which the loop takes as muted
        #expect(failure { try file.save(false) }?.message.hasSuffix("; unmuted now, but a restart may start muted") == true)
        #expect(files.read(path) == "")
    }

    /// A mute file the speaker cannot read for certain (a damaged "tru"): it starts muted, says why, never opens
    /// the microphone, and a double press unmutes as ever.
    @Test func anUnreadableMuteStartsMuted() async {
        let store = FakeFlagStore(loadFailure: DeviceProblem("/var/lib/hound-speaker/muted holds neither true nor false (\"tru\")"))
        let rig = await LoopRig(hotPhrase: true, muteStore: store)
        #expect(await rig.saw(.leds(.muted)))
        #expect(await rig.saw(.deviceProblem(DeviceProblem(
            "/var/lib/hound-speaker/muted holds neither true nor false (\"tru\"); starting muted, since mute is unknown"))))
        #expect(rig.microphone.opens == 0 && rig.loop.snapshot.muted)
        let mark = rig.recorder.count
        rig.board.press(.doublePress)
        #expect(await rig.saw(.leds(.ready), after: mark))
        #expect(await rig.eventually { rig.microphone.openStreams == 1 })
        await rig.stop()
    }

    /// A mute that cannot be saved: the speaker is muted now all the same, and the problem is told.
    @Test func aMuteThatCannotBeSavedStaysMutedAndIsTold() async {
        let failure = DeviceProblem("mute: cannot write muted: No space left on device; muted now, but a restart would not remember it")
        let store = FakeFlagStore(saveFailure: failure)
        let rig = await LoopRig(hotPhrase: true, muteStore: store)
        #expect(await rig.eventually { rig.microphone.openStreams == 1 })
        rig.board.press(.doublePress)
        #expect(await rig.saw(.leds(.muted)))
        #expect(await rig.saw(.deviceProblem(failure)))
        #expect(rig.microphone.openStreams == 0 && rig.loop.snapshot.muted)
        await rig.stop()
    }
}
