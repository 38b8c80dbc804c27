import BoardCore
import Control
import ControlCore
import JSONKit
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing

/// The LED ring switched and dimmed the control API's way (`ctl ring`, Home Assistant's light): the board gets it,
/// the snapshot and the events say it, and a speaker without a ring says so.
@Suite struct RingSettingTests {
    @Test func theRingIsSwitchedAndDimmedThroughTheLoop() async {
        let rig = await LoopRig(ring: RingSetting(brightness: 10))
        let hub = ControlHub()
        hub.attach(rig.loop)
        #expect(rig.loop.snapshot.ring == RingSetting(on: true, percent: 32))
        #expect(await hub.perform(.ring(on: false, percent: nil), waitForAnswer: false) == ["ok": true, "ring": ["on": false, "percent": 32]])
        // The brightness builds on the last request at once, before the loop has shown the first.
        #expect(await hub.perform(.ring(on: nil, percent: 80), waitForAnswer: false) == ["ok": true, "ring": ["on": false, "percent": 80]])
        #expect(await hub.perform(.ring(on: true, percent: nil), waitForAnswer: false) == ["ok": true, "ring": ["on": true, "percent": 80]])
        #expect(await rig.saw(.ring(RingSetting(on: true, percent: 80))))
        await rig.loop.settled()
        #expect(rig.board.ringSettings == [RingSetting(on: false, percent: 32), RingSetting(on: false, percent: 80), RingSetting(on: true, percent: 80)])
        #expect(rig.loop.snapshot.ring == RingSetting(on: true, percent: 80))
        #expect(SpeakerActivity.ring(RingSetting(on: true, percent: 80)).json == #"{"event":"ring","on":true,"percent":80}"#)
        await rig.stop()
    }

    @Test func aSpeakerWithoutARingSaysSo() async {
        let rig = await LoopRig()
        let hub = ControlHub()
        hub.attach(rig.loop)
        let reply = await hub.perform(.ring(on: false, percent: nil), waitForAnswer: false)
        #expect(reply["ok"] == false)
        #expect(reply["error"]?.stringValue?.contains("this speaker has no LED ring") == true)
        #expect(rig.loop.snapshot.ring == nil && rig.board.ringSettings.isEmpty)
        await rig.stop()
    }

    @Test func aProfilesBrightnessIsAPercentAndBack() {
        #expect(RingSetting(brightness: 31) == RingSetting(on: true, percent: 100))
        #expect(RingSetting(brightness: 0).on == false)
        #expect(RingSetting(brightness: 10).brightness == 10)
        #expect(RingSetting(on: true, percent: 1).brightness == 1)  // dimmest, still lit
        #expect(RingSetting(on: false, percent: 100).brightness == 0)
        #expect(RingSetting(on: true, percent: 500).percent == 100 && RingSetting(on: true, percent: -3).percent == 1)
        for level in 1...31 { #expect(RingSetting(brightness: level).brightness == level, "\(level)") }
    }
}
