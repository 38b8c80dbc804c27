import CALSA
public import Platform

/// The doctor's audio checks: the PCMs ALSA offers, then the configured microphone and speaker opened as the speaker
/// opens them (and closed at once).
public enum AudioDiagnostics {
    public static func diagnostics(capture: CaptureSettings, output: String) -> [Diagnostic] {
        let devices = ALSADevices.list()
        var out = [
            Diagnostic(.info, "capture devices: \(devices.capture.isEmpty ? "none" : devices.capture.joined(separator: ", "))"),
            Diagnostic(.info, "playback devices: \(devices.playback.isEmpty ? "none" : devices.playback.joined(separator: ", "))"),
        ]
        do throws(AudioDeviceError) {
            let opened = try ALSACapture(settings: capture, onFrame: { _, _ in })
            out.append(.check(true, "microphone \"\(capture.device)\" opens (\(opened.deviceRate) Hz, \(capture.channels) channel(s), converted to 16 kHz mono)"))
            opened.close()
        } catch {
            out.append(.check(false, "microphone: \(error.description)", advice: "set [audio] input to one of the capture devices above"))
        }
        do throws(AudioDeviceError) {
            let playback = try ALSAPlayback(device: output, sampleRate: 22050)
            playback.close()
            out.append(.check(true, "speaker \"\(output)\" opens"))
        } catch {
            out.append(.check(false, "speaker: \(error.description)", advice: "set [audio] output to one of the playback devices above"))
        }
        return out
    }

    public static var libraryVersion: Diagnostic { Diagnostic(.info, "libasound \(String(cString: snd_asoundlib_version()))") }
}
