import AudioCore
import CALSA
import Foundation
import Testing
import Audio
import Speech
import TestSupport

/// The volume through a real ALSA mixer control (issue #61): a `softvol` PCM over the kernel's loopback card
/// (snd-aloop), whose control alsa-lib itself creates in the card's control interface the first time the PCM opens.
/// The speaker's OutputVolume sets it, libasound's mixer API reads it back, and the speech engine plays a known tone
/// through it at each level while the loopback's capture side records what came out, whose level is measured.
///
/// It needs a kernel sound card, snd-aloop's. Where there is none (CI's machine has no sound in its kernel at all)
/// it is skipped, saying so; `Tests/soundcard/run.sh` (from tools/test.sh) runs it in a virtual machine whose
/// kernel has snd-aloop, where it must run, and where it also takes the card away and back.
@Suite(.serialized) struct SoftvolMixerTests {
    static let control = "Hound Test"
    static let element = "Hound Test Playback Volume"
    static let pcm = "test_softvol"
    /// The loopback's last substream: what is played into device 0 is captured from device 1. Both sides hw, in
    /// the tone's own format (no plug layer to choose another): snd-aloop stops a running capture whose playback
    /// side starts in another format.
    static let playbackDevice = "hw:CARD=Loopback,DEV=0,SUBDEV=7"
    static let captureDevice = "hw:CARD=Loopback,DEV=1,SUBDEV=7"
    static let rate = 22050

    @Test(.enabled(if: LoopbackCard.index != nil || LoopbackCard.required,
                   "no kernel sound card: /proc/asound/cards has no snd-aloop card here (this machine's kernel may have no sound at all); Tests/soundcard/run.sh runs this test in a VM that has one, or `modprobe snd-aloop` as root"))
    func theVolumeIsASoftvolControlOnARealCardAndIsHeardAtItsLevel() async throws {
        let card = try #require(LoopbackCard.index)
        // softvol's range as the box's: 50 dB in 100 steps, the same curve as the software volume (80 % is -10 dB).
        try TestALSA.defineCardPCMs("""
            pcm.\(Self.pcm) {
                type softvol
                slave.pcm "\(Self.playbackDevice)"
                control { name "\(Self.element)" card \(card) }
                min_dB -50.0
                max_dB 0.0
                resolution 101
            }

            """)
        // A fresh control: one left by an earlier run in this boot would be found instead of made.
        removeUserElement(card: card, name: Self.element)
        #expect(!elementExists(card: card, name: Self.element))

        // The speaker opens the mixer: its PCM is opened first, which is what makes softvol create the control.
        let volume = try OutputVolume(percent: 100, device: Self.pcm, mixerControl: Self.control)
        #expect(elementIsUserMade(card: card, name: Self.element), "softvol's control is a user element alsa-lib added")
        #expect(mixerReading(card: card) == MixerReading(raw: 100, centibels: 0))
        let engine = try SpeechEngine(settings: VoiceSettings(), volume: volume)
        let tone = Self.tone()
        let full = try await heard(tone, engine)

        #expect(try volume.set(50) == 50)
        #expect(mixerReading(card: card) == MixerReading(raw: 50, centibels: -2500))
        let half = try await heard(tone, engine)

        try volume.setSoundOff(true)
        #expect(mixerReading(card: card)?.raw == 0)
        let off = try await heard(tone, engine)
        try volume.setSoundOff(false)
        #expect(mixerReading(card: card)?.raw == 50)

        let toneLevel = AudioLevel.dBFS(tone.samples)
        print("softvol on card \(card) (\(Self.element)): the tone \(String(format: "%.2f", toneLevel)) dBFS; heard at 100 %: \(String(format: "%.2f", full)) dBFS, at 50 %: \(String(format: "%.2f", half)) dBFS (\(String(format: "%.2f", full - half)) dB down, 25 expected), sound off: \(String(format: "%.1f", off)) dBFS")
        #expect(abs(full - toneLevel) < 0.5, "at 100 % the tone comes out as it went in")
        #expect(abs((full - half) - 25) < 0.5, "50 % is 25 dB down on softvol's 50 dB range")
        #expect(off < -80, "sound off is silence")

        // The card goes away and comes back (its driver unbound and bound, as the box does): softvol makes its
        // control anew at 0 dB when its PCM next opens, and the speaker sets its level again before playback opens.
        // Only where this machine is the test's own (the VM), since it takes the card from everyone.
        guard LoopbackCard.required else { return }
        let driver = "/sys/bus/platform/drivers/snd_aloop"
        try "snd_aloop.0".write(toFile: "\(driver)/unbind", atomically: false, encoding: .utf8)
        #expect(!elementExists(card: card, name: Self.element))
        try "snd_aloop.0".write(toFile: "\(driver)/bind", atomically: false, encoding: .utf8)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: "/dev/snd/controlC\(card)") && Date() < deadline { usleep(50_000) }
        #expect(!elementExists(card: card, name: Self.element), "the card came back without the control")
        let again = try await heard(tone, engine)
        #expect(mixerReading(card: card) == MixerReading(raw: 50, centibels: -2500))
        print("after the card was unbound and bound again: heard at 50 %: \(String(format: "%.2f", again)) dBFS")
        #expect(abs(again - half) < 0.5, "the level is the speaker's again, not softvol's 0 dB")
    }

    /// 1 s of 1 kHz at half of full scale (-9.03 dBFS).
    static func tone() -> MonoAudio {
        MonoAudio(samples: (0..<rate).map { Int16(16384 * sin(2 * Double.pi * 1000 * Double($0) / Double(rate))) }, sampleRate: rate)
    }

    /// Plays `tone` through the softvol PCM with the speaker's speech engine while the loopback's capture side
    /// records; returns the level of what came out: the median level of 10 ms blocks over the middle half of the tone
    /// as heard (no edges, no silence around it).
    func heard(_ tone: MonoAudio, _ engine: SpeechEngine) async throws -> Double {
        let recorder = try LoopbackRecorder(device: Self.captureDevice, rate: Self.rate)
        let result = try await engine.play(tone, to: .device(Self.pcm)).result().get()
        #expect(result.outcome == .finished)
        try await Task.sleep(for: .milliseconds(300))
        let (samples, overruns) = recorder.stop()
        #expect(overruns == 0, "the capture overran \(overruns) time(s): samples were lost")
        // Where the tone was: the recording holds silence before and after it, and nothing else is played into
        // this substream. Its level: the median of its 10 ms blocks' levels over the middle half (no edges).
        let threshold = Int16(100)
        guard let first = samples.firstIndex(where: { abs(Int32($0)) > threshold }),
              let last = samples.lastIndex(where: { abs(Int32($0)) > threshold }), last - first > Self.rate / 2 else {
            return AudioLevel.dBFS(samples)
        }
        let quarter = (last - first) / 4, block = Self.rate / 100
        let blocks = stride(from: first + quarter, to: last - quarter - block, by: block).map { AudioLevel.dBFS(samples[$0..<($0 + block)]) }
        return blocks.sorted()[blocks.count / 2]
    }

    struct MixerReading: Equatable { var raw: Int; var centibels: Int }

    /// The control's value and its level in dB (hundredths) as libasound's simple mixer API reads them, on a mixer
    /// of its own (not the speaker's).
    func mixerReading(card: Int) -> MixerReading? {
        var handle: OpaquePointer?
        guard snd_mixer_open(&handle, 0) >= 0, let handle else { return nil }
        defer { snd_mixer_close(handle) }
        guard snd_mixer_attach(handle, "hw:\(card)") >= 0, snd_mixer_selem_register(handle, nil, nil) >= 0,
              snd_mixer_load(handle) >= 0 else { return nil }
        var id: OpaquePointer?
        snd_mixer_selem_id_malloc(&id)
        defer { snd_mixer_selem_id_free(id) }
        snd_mixer_selem_id_set_name(id, Self.control)
        guard let element = snd_mixer_find_selem(handle, id) else { return nil }
        var raw = 0, dB = 0
        snd_mixer_selem_get_playback_volume(element, SND_MIXER_SCHN_FRONT_LEFT, &raw)
        snd_mixer_selem_get_playback_dB(element, SND_MIXER_SCHN_FRONT_LEFT, &dB)
        return MixerReading(raw: raw, centibels: dB)
    }

    /// The card's control element `name` through the control API (the layer under the mixer), if it is there.
    func withElementInfo<T>(card: Int, name: String, _ body: (OpaquePointer, OpaquePointer) -> T) -> T? {
        var ctl: OpaquePointer?
        guard snd_ctl_open(&ctl, "hw:\(card)", 0) >= 0, let ctl else { return nil }
        defer { snd_ctl_close(ctl) }
        var info: OpaquePointer?
        snd_ctl_elem_info_malloc(&info)
        defer { snd_ctl_elem_info_free(info) }
        snd_ctl_elem_info_set_interface(info, SND_CTL_ELEM_IFACE_MIXER)
        snd_ctl_elem_info_set_name(info, name)
        guard snd_ctl_elem_info(ctl, info) >= 0 else { return nil }
        return body(ctl, info!)
    }

    func elementExists(card: Int, name: String) -> Bool { withElementInfo(card: card, name: name) { _, _ in true } ?? false }

    func elementIsUserMade(card: Int, name: String) -> Bool {
        withElementInfo(card: card, name: name) { _, info in snd_ctl_elem_info_is_user(info) != 0 } ?? false
    }

    func removeUserElement(card: Int, name: String) {
        _ = withElementInfo(card: card, name: name) { ctl, info in
            var id: OpaquePointer?
            snd_ctl_elem_id_malloc(&id)
            defer { snd_ctl_elem_id_free(id) }
            snd_ctl_elem_info_get_id(info, id)
            return snd_ctl_elem_remove(ctl, id)
        }
    }
}

/// The kernel's loopback card, if it is loaded (the test loads no module on a developer's machine: Tests/soundcard's
/// VM loads it).
enum LoopbackCard {
    /// In Tests/soundcard's VM the card must be there: the test fails rather than skips.
    static let required = ProcessInfo.processInfo.environment["HOUND_SPEAKER_SOUNDCARD_VM"] == "1"
    static let index: Int? = find()

    /// From /proc/asound/cards: " 0 [Loopback       ]: Loopback - Loopback".
    static func find() -> Int? {
        guard let cards = try? String(contentsOfFile: "/proc/asound/cards", encoding: .utf8) else { return nil }
        for line in cards.split(separator: "\n") where line.contains("[Loopback") {
            if let n = Int(line.split(separator: " ").first ?? "") { return n }
        }
        return nil
    }
}

/// Records 16-bit mono from a capture PCM on a thread of its own until stopped.
final class LoopbackRecorder: @unchecked Sendable {
    private let pcm: OpaquePointer
    private let lock = NSLock()
    private var samples: [Int16] = []
    private var overruns = 0
    private var stopping = false
    private let done = DispatchSemaphore(value: 0)

    init(device: String, rate: Int) throws {
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, 0)
        guard rc >= 0, let handle else { throw AudioDeviceError(device: device, message: "cannot open for capture: \(rc)") }
        // Half a second of buffer: an emulated machine's threads can stall for more than the usual 100 ms.
        rc = snd_pcm_set_params(handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1, UInt32(rate), 0, 500_000)
        guard rc >= 0 else {
            snd_pcm_close(handle)
            throw AudioDeviceError(device: device, message: "cannot capture 16-bit mono at \(rate) Hz: \(rc)")
        }
        pcm = handle
        snd_pcm_start(handle)
        Thread { [self] in run() }.start()
    }

    private func run() {
        var buffer = [Int16](repeating: 0, count: 1024)
        while !lock.withLock({ stopping }) {
            let n = buffer.withUnsafeMutableBufferPointer { snd_pcm_readi(pcm, $0.baseAddress, 1024) }
            if n < 0 {
                lock.withLock { overruns += 1 }
                snd_pcm_prepare(pcm)
                continue
            }
            lock.withLock { samples += buffer[0..<Int(n)] }
        }
        done.signal()
    }

    /// What was recorded, and how many times the capture overran (or was stopped) and lost samples.
    func stop() -> ([Int16], overruns: Int) {
        lock.withLock { stopping = true }
        done.wait()
        snd_pcm_close(pcm)
        return lock.withLock { (samples, overruns) }
    }
}
