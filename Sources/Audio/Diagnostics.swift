public import AudioCore
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

    /// With `[audio] echo_cancel` on: plays two seconds of quiet noise on the speaker while the microphone listens
    /// through the echo canceller, and reads where the canceller's filter found the echo (`EchoCanceller.echoPath`).
    public static func echoDelay(capture: CaptureSettings, output: String, settings: EchoCancelSettings) -> Diagnostic {
        // A long tail and no configured delay: the echo is looked for anywhere in the first half second.
        let canceller = EchoCanceller(settings: EchoCancelSettings(enabled: true, delayMS: 0, tailMS: 500))
        let capturing: ALSACapture
        let playback: ALSAPlayback
        do throws(AudioDeviceError) {
            capturing = try ALSACapture(settings: capture, echoCanceller: canceller, onFrame: { _, _ in })
            playback = try ALSAPlayback(device: output, sampleRate: SpeakerAudio.sampleRate)
        } catch {
            return Diagnostic(.warn, "echo delay not measured: \(error.description)")
        }
        playback.echo = canceller
        capturing.start()
        // Noise at -26 dBFS: loud enough for the microphone to hear it across a box, quiet enough not to startle.
        var state: UInt32 = 19
        let noise = (0..<32_000).map { _ -> Int16 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return Int16(truncatingIfNeeded: Int32(bitPattern: state) >> 16) / 20
        }
        var failure: AudioDeviceError? = nil
        noise.withUnsafeBufferPointer { samples in
            do throws(AudioDeviceError) { try playback.write(samples) } catch { failure = error }
        }
        let outputDelay = playback.queuedFrames ?? 0
        playback.drain()
        playback.close()
        capturing.stop()
        if let failure { return Diagnostic(.warn, "echo delay not measured: \(failure.description)") }
        let path = canceller.echoPath()
        let devices = "the speaker's buffer held \(outputDelay / SpeakerAudio.samplesPerMS) ms"
        guard path.prominence > 8 else {
            return Diagnostic(.warn, "echo: the microphone did not hear the test noise from the speaker (\(devices))",
                              advice: "turn the volume up or bring the microphone nearer; a file or null device has no echo to find")
        }
        let delay = Int(path.delayMS.rounded())
        let advice = delay == settings.delayMS ? "" : "set [audio] echo_delay_ms = \(delay) (it is \(settings.delayMS))"
        return Diagnostic(delay == settings.delayMS ? .ok : .warn,
                          "echo: heard \(delay) ms after the devices' own delays say (\(devices); the echo stands \(Int(path.prominence)) times above the filter's noise)",
                          advice: advice)
    }

    public static var libraryVersion: Diagnostic { Diagnostic(.info, "libasound \(String(cString: snd_asoundlib_version()))") }
}
