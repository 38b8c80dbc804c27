import CALSA
import FoundationEssentials
import Glibc
import Platform
import Synchronization

/// The speaker's output volume, 0-100, applied either by an ALSA mixer control or by scaling the samples.
/// Shared by the speech thread (which reads the gain for every block) and whoever turns it up or down.
public final class OutputVolume: Sendable {
    private let percent: Mutex<Int>
    private let off = Mutex(false)
    private let mixer: ALSAMixer?
    public static let step = 10

    /// `mixerControl` "" scales samples; otherwise the control on `device`'s card sets the volume and samples
    /// pass unscaled. Fails naming the device and control if the control cannot be found.
    public init(percent: Int, device: String, mixerControl: String) throws(AudioDeviceError) {
        self.percent = Mutex(max(0, min(100, percent)))
        mixer = mixerControl.isEmpty ? nil : try ALSAMixer(device: device, control: mixerControl)
        try mixer?.set(percent: self.percent.withLock { $0 })
    }

    public var current: Int { percent.withLock { $0 } }

    /// Sets the volume (clamped to 0-100) and returns it; the sound comes back on if it was off.
    @discardableResult
    public func set(_ value: Int) throws(AudioDeviceError) -> Int {
        let clamped = max(0, min(100, value))
        percent.withLock { $0 = clamped }
        off.withLock { $0 = false }
        try mixer?.set(percent: clamped)
        return clamped
    }

    /// The sound switched off (silence) or back on at the level it had; the level is kept meanwhile.
    public var isSoundOff: Bool { off.withLock { $0 } }

    public func setSoundOff(_ value: Bool) throws(AudioDeviceError) {
        off.withLock { $0 = value }
        try mixer?.set(percent: value ? 0 : current)
    }

    /// Writes the level to the mixer control again; the speech engine calls it before each utterance's playback
    /// opens. A card that went and came back, or a softvol control made anew by its PCM's first open, starts at its
    /// own default (softvol's is 0 dB, full volume), not at the speaker's level. Without a mixer there is nothing to do.
    public func reapply() throws(AudioDeviceError) {
        try mixer?.set(percent: isSoundOff ? 0 : current)
    }

    @discardableResult public func up() throws(AudioDeviceError) -> Int { try set(current + Self.step) }
    @discardableResult public func down() throws(AudioDeviceError) -> Int { try set(current - Self.step) }

    /// Linear gain for software volume: 50 dB of range (100 is 0 dB, 80 is -10 dB, 50 is -25 dB), 0 is silence.
    /// With a mixer control the samples are left alone (gain 1), except that sound off and 0 are silence there too:
    /// a mixer's lowest setting need not be mute (softvol's is its min_dB).
    public var softwareGain: Float {
        if isSoundOff || current == 0 { return 0 }
        return mixer == nil ? Self.gain(forPercent: current) : 1
    }

    public static func gain(forPercent p: Int) -> Float {
        p <= 0 ? 0 : Float(pow(10, (Double(p) - 100) * 0.5 / 20))
    }
}

/// One playback volume control of an ALSA mixer (snd_mixer simple elements), set in percent of its range.
/// Each setting opens the card's mixer, finds the control, writes it and closes it again, so a card that went away
/// and came back (its driver rebound, a USB card replugged), or a softvol control made anew, is found as it is now:
/// a handle kept open would be to the old card, and its cached value would skip the write.
final class ALSAMixer: Sendable {
    let device: String
    let control: String
    /// The control interface holding it, "hw:CARD=id" (or the form in the device's name), found once at the start.
    let card: String
    /// One setting at a time, in the order asked (the loop's volume changes and the speech thread's re-applying).
    private let writing = Mutex(())

    init(device: String, control: String) throws(AudioDeviceError) {
        _ = quietALSA
        self.device = device
        self.control = control
        card = ALSAMixer.card(of: device)
        try writing.withLock { _ throws(AudioDeviceError) in try withElement { _ in 0 } }
    }

    /// The card whose control interface has `device`'s volume. First the card the PCM reports when opened: a softvol
    /// PCM (or plug, dmix...) over a card names that card, and opening it is also what makes softvol create its
    /// control, which does not exist until its PCM has been opened once since the card appeared. A PCM that will not
    /// open now (busy, absent) or is on no card: the card in its name (`cardName(for:)`). The card by its id, not
    /// its index: a USB card plugged in again may come back under another number.
    static func card(of device: String) -> String {
        var pcm: OpaquePointer?
        guard snd_pcm_open(&pcm, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK) >= 0, let pcm else { return cardName(for: device) }
        defer { snd_pcm_close(pcm) }
        var info: OpaquePointer?
        snd_pcm_info_malloc(&info)
        defer { snd_pcm_info_free(info) }
        guard snd_pcm_info(pcm, info) >= 0 else { return cardName(for: device) }
        let index = snd_pcm_info_get_card(info)
        guard index >= 0 else { return cardName(for: device) }
        var ctl: OpaquePointer?
        guard snd_ctl_open(&ctl, "hw:\(index)", 0) >= 0, let ctl else { return "hw:\(index)" }
        defer { snd_ctl_close(ctl) }
        var cardInfo: OpaquePointer?
        snd_ctl_card_info_malloc(&cardInfo)
        defer { snd_ctl_card_info_free(cardInfo) }
        guard snd_ctl_card_info(ctl, cardInfo) >= 0, let id = snd_ctl_card_info_get_id(cardInfo) else { return "hw:\(index)" }
        return "hw:CARD=\(String(cString: id))"
    }

    static func cardName(for device: String) -> String {
        if let range = device.firstRange(of: "CARD=") {
            let name = device[range.upperBound...].prefix { $0 != "," }
            return "hw:CARD=\(name)"
        }
        if device.hasPrefix("hw:") || device.hasPrefix("plughw:") {
            let rest = device.split(separator: ":", maxSplits: 1).last.map(String.init) ?? "0"
            return "hw:\(rest.split(separator: ",").first ?? "0")"
        }
        return "default"
    }

    /// Opens the card's mixer, finds the control and calls `body` with it; closes the mixer after. A control not
    /// there is looked for again once after opening and closing the device's PCM: a softvol PCM makes its control
    /// then (after the card appeared, or came back). Opened and closed here, not by the playback: the kernel lets
    /// only the handle that added a control write it while that handle is open, and softvol's stays open as long
    /// as its PCM. Errors name the device, the mixer and the control.
    private func withElement(_ body: (OpaquePointer) -> Int32) throws(AudioDeviceError) {
        do throws(AudioDeviceError) {
            try withElementNow(body)
        } catch where error.isConfiguration {
            var pcm: OpaquePointer?
            guard snd_pcm_open(&pcm, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK) >= 0, let pcm else { throw error }
            snd_pcm_close(pcm)
            try withElementNow(body)
        }
    }

    private func withElementNow(_ body: (OpaquePointer) -> Int32) throws(AudioDeviceError) {
        var handle: OpaquePointer?
        var rc = snd_mixer_open(&handle, 0)
        guard rc >= 0, let handle else { throw .from(device: device, operation: "cannot open a mixer for control \"\(control)\"", code: rc) }
        defer { snd_mixer_close(handle) }
        rc = snd_mixer_attach(handle, card)
        if rc >= 0 { rc = snd_mixer_selem_register(handle, nil, nil) }
        if rc >= 0 { rc = snd_mixer_load(handle) }
        guard rc >= 0 else { throw .from(device: device, operation: "cannot open mixer \"\(card)\" for control \"\(control)\"", code: rc) }
        var id: OpaquePointer?
        snd_mixer_selem_id_malloc(&id)
        defer { snd_mixer_selem_id_free(id) }
        snd_mixer_selem_id_set_index(id, 0)
        snd_mixer_selem_id_set_name(id, control)
        guard let found = snd_mixer_find_selem(handle, id), snd_mixer_selem_has_playback_volume(found) != 0 else {
            var names: [String] = []
            var e = snd_mixer_first_elem(handle)
            while let elem = e {
                if snd_mixer_selem_has_playback_volume(elem) != 0 { names.append(String(cString: snd_mixer_selem_get_name(elem))) }
                e = snd_mixer_elem_next(elem)
            }
            throw AudioDeviceError(device: device, message: "mixer \"\(card)\" has no playback volume control \"\(control)\""
                + (names.isEmpty ? "" : "; it has: \(names.joined(separator: ", "))") + " (`amixer scontrols`)", isConfiguration: true)
        }
        rc = body(found)
        if rc < 0 { throw .from(device: device, operation: "mixer \"\(card)\": cannot set control \"\(control)\"", code: rc) }
    }

    func set(percent: Int) throws(AudioDeviceError) {
        try writing.withLock { _ throws(AudioDeviceError) in
            try withElement { element in
                var low = 0, high = 0
                snd_mixer_selem_get_playback_volume_range(element, &low, &high)
                return snd_mixer_selem_set_playback_volume_all(element, low + (high - low) * percent / 100)
            }
        }
    }
}
