import CALSA

/// The PCM names ALSA offers (what `aplay -L` / `arecord -L` list), for doctor.
public enum ALSADevices {
    public static func list() -> (capture: [String], playback: [String]) {
        _ = quietALSA
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return ([], []) }
        defer { snd_device_name_free_hint(hints) }
        var capture: [String] = [], playback: [String] = []
        var i = 0
        while let hint = hints[i] {
            i += 1
            guard let namePointer = snd_device_name_get_hint(hint, "NAME") else { continue }
            let name = String(cString: namePointer)
            free(namePointer)
            let io = snd_device_name_get_hint(hint, "IOID").map { p -> String in defer { free(p) }; return String(cString: p) }
            if io == nil || io == "Input" { capture.append(name) }
            if io == nil || io == "Output" { playback.append(name) }
        }
        return (capture, playback)
    }
}
