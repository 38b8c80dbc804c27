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

    @discardableResult public func up() throws(AudioDeviceError) -> Int { try set(current + Self.step) }
    @discardableResult public func down() throws(AudioDeviceError) -> Int { try set(current - Self.step) }

    /// Linear gain for software volume: 50 dB of range (100 is 0 dB, 80 is -10 dB, 50 is -25 dB), 0 is silence.
    /// With a mixer control the samples are left alone (gain 1).
    public var softwareGain: Float {
        guard mixer == nil else { return 1 }
        return isSoundOff ? 0 : Self.gain(forPercent: current)
    }

    public static func gain(forPercent p: Int) -> Float {
        p <= 0 ? 0 : Float(pow(10, (Double(p) - 100) * 0.5 / 20))
    }
}

/// One playback volume control of an ALSA mixer (snd_mixer simple elements), set in percent of its range.
final class ALSAMixer: Sendable {
    /// The mixer and its element. @unchecked: C handles; a snd_mixer handle is not thread-safe, so every call on it
    /// is made under the Mutex that holds them.
    private struct Handles: @unchecked Sendable {
        let mixer: OpaquePointer
        let element: OpaquePointer
    }
    private let handles: Mutex<Handles>
    let device: String
    let control: String

    init(device: String, control: String) throws(AudioDeviceError) {
        _ = quietALSA
        self.device = device
        self.control = control
        var handle: OpaquePointer?
        var rc = snd_mixer_open(&handle, 0)
        guard rc >= 0, let handle else { throw .from(device: device, operation: "cannot open a mixer", code: rc) }
        // The mixer of a PCM's card: "default" and "plughw:CARD=x,DEV=0" both name it; hw:CARD=x is the usual form.
        let card = ALSAMixer.cardName(for: device)
        rc = snd_mixer_attach(handle, card)
        if rc >= 0 { rc = snd_mixer_selem_register(handle, nil, nil) }
        if rc >= 0 { rc = snd_mixer_load(handle) }
        guard rc >= 0 else {
            snd_mixer_close(handle)
            throw .from(device: device, operation: "cannot open mixer \"\(card)\"", code: rc)
        }
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
            snd_mixer_close(handle)
            throw AudioDeviceError(device: device, message: "mixer \"\(card)\" has no playback volume control \"\(control)\""
                + (names.isEmpty ? "" : "; it has: \(names.joined(separator: ", "))") + " (`amixer scontrols`)", isConfiguration: true)
        }
        handles = Mutex(Handles(mixer: handle, element: found))
    }

    deinit { handles.withLock { _ = snd_mixer_close($0.mixer) } }

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

    func set(percent: Int) throws(AudioDeviceError) {
        let rc = handles.withLock { handles in
            var low = 0, high = 0
            snd_mixer_selem_get_playback_volume_range(handles.element, &low, &high)
            return snd_mixer_selem_set_playback_volume_all(handles.element, low + (high - low) * percent / 100)
        }
        if rc < 0 { throw .from(device: device, operation: "cannot set \"\(control)\" to \(percent) %", code: rc) }
    }
}
