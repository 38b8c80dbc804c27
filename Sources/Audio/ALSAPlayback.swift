import AudioCore
import CALSA
import CShims
import FoundationEssentials
import Platform
import Glibc

/// Called before any ALSA use: the library's own stderr lines go (our errors name the device and the cause).
let quietALSA: Void = hs_alsa_quiet()

public struct AudioDeviceError: Error, CustomStringConvertible, Equatable {
    public var device: String
    public var message: String
    /// The config asks for something the device does not have (a mixer control): a restart cannot mend it. A
    /// device that is missing is not this: a card plugged in later is found on the next start.
    public var isConfiguration: Bool
    public init(device: String, message: String, isConfiguration: Bool = false) {
        self.device = device
        self.message = message
        self.isConfiguration = isConfiguration
    }
    public var description: String { "ALSA device \"\(device)\": \(message)" }

    /// A libasound error code as a sentence, with advice for the common ones.
    static func from(device: String, operation: String, code: Int32) -> AudioDeviceError {
        var message = "\(operation): \(String(cString: snd_strerror(code)))"
        switch -code {
        case ENOENT, ENODEV: message += " (no such device: `aplay -L` / `arecord -L` list the names)"
        case EBUSY:
            let holders = soundDeviceHolders()
            message += holders.isEmpty
                ? " (another program has it open: `fuser -v /dev/snd/*` shows which; PulseAudio or PipeWire often do)"
                : " (held by \(holders.joined(separator: ", ")); stop it, or use a device that shares, such as \"default\" through PipeWire)"
        case EACCES, EPERM: message += " (permission: add the user to the audio group)"
        default: break
        }
        return AudioDeviceError(device: device, message: message)
    }
}

/// 16-bit mono output to an ALSA PCM with a short buffer: writes block for at most about one period, so a
/// stop takes effect quickly, and `stop()` drops what is queued instead of playing it out. Not thread-safe:
/// the thread that writes also stops (the speech thread owns it).
public final class ALSAPlayback {
    public let device: String
    public let sampleRate: Int
    private var pcm: OpaquePointer?
    /// Told what was written and when it will be heard, as the echo canceller's reference (`[audio] echo_cancel`).
    public var echo: EchoCanceller?

    /// Opens `device` for `sampleRate` Hz mono with about `latencyMS` of buffer (periods of a quarter of it);
    /// ALSA's plug layer converts to what the card supports.
    public init(device: String, sampleRate: Int, latencyMS: Int = 80) throws(AudioDeviceError) {
        self.device = device
        self.sampleRate = sampleRate
        _ = quietALSA
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard rc >= 0, let handle else { throw .from(device: device, operation: "cannot open for playback", code: rc) }
        rc = snd_pcm_set_params(handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1, UInt32(sampleRate), 1,
                                UInt32(latencyMS * 1000))
        guard rc >= 0 else {
            snd_pcm_close(handle)
            throw .from(device: device, operation: "cannot play 16-bit mono at \(sampleRate) Hz", code: rc)
        }
        pcm = handle
    }

    deinit { close() }

    /// Writes samples, recovering from an underrun (the speech thread may fall behind for a moment).
    public func write(_ samples: UnsafeBufferPointer<Int16>) throws(AudioDeviceError) {
        guard let pcm, var base = samples.baseAddress else { return }
        var left = samples.count
        while left > 0 {
            // Heard once what the device holds ahead of these has played (its delay, read before they join it).
            var heard: TimelinePosition = 0
            if echo != nil {
                var delay: snd_pcm_sframes_t = 0
                if snd_pcm_delay(pcm, &delay) < 0 { delay = 0 }
                heard = timelineNow() + TimelinePosition.timeline(frames: max(0, Int(delay)), rate: sampleRate)
            }
            let written = snd_pcm_writei(pcm, base, snd_pcm_uframes_t(left))
            if written < 0 {
                let rc = snd_pcm_recover(pcm, Int32(written), 1)
                if rc < 0 { throw .from(device: device, operation: "playback failed", code: rc) }
                continue
            }
            echo?.played(UnsafeBufferPointer(start: base, count: Int(written)), rate: sampleRate, heard: heard)
            left -= Int(written)
            base += Int(written)
        }
    }

    /// Plays out what is queued, then returns.
    public func drain() {
        if let pcm { snd_pcm_drain(pcm); snd_pcm_prepare(pcm) }
        echo?.outputClosed()
    }

    /// Drops what is queued at once (stopSpeaking): nothing more is heard.
    public func stop() {
        if let pcm { snd_pcm_drop(pcm); snd_pcm_prepare(pcm) }
        echo?.outputStopped(at: timelineNow())
    }

    public func close() {
        if let pcm { snd_pcm_close(pcm) }
        pcm = nil
    }

    /// The frames queued ahead of the next write (snd_pcm_delay); nil when the device cannot say.
    public var queuedFrames: Int? {
        var frames: snd_pcm_sframes_t = 0
        guard let pcm, snd_pcm_delay(pcm, &frames) >= 0 else { return nil }
        return Int(frames)
    }

    /// The period the device was set up with, in frames (how long a write may block).
    public var periodFrames: Int {
        guard let pcm else { return 0 }
        var buffer: snd_pcm_uframes_t = 0, period: snd_pcm_uframes_t = 0
        snd_pcm_get_params(pcm, &buffer, &period)
        return Int(period)
    }
}

/// Processes that have an ALSA PCM device open, as "name (pid N)": who to suspect when a device is busy.
func soundDeviceHolders() -> [String] {
    let fm = FileManager.default
    var holders: [String] = []
    for pid in (try? fm.contentsOfDirectory(atPath: "/proc")) ?? [] where Int(pid) != nil && Int32(pid) != getpid() {
        let fds = (try? fm.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let holds = fds.contains { fd in
            (try? fm.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"))?.hasPrefix("/dev/snd/pcm") == true
        }
        if holds {
            let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmed(.whitespacesAndNewlines) ?? "?"
            holders.append("\(name) (pid \(pid))")
        }
    }
    return holders
}
