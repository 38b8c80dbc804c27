import FoundationEssentials
public import AudioCore
import Glibc
import CSndfile
import CSoxr

public enum AudioFileError: Error, CustomStringConvertible, Equatable {
    case cannotOpen(path: String, reason: String)
    case notPCM(path: String, format: String)
    case empty(path: String)
    case resampler(String)
    case cannotWrite(path: String, reason: String)
    case library(name: String, reason: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "\(path): cannot read audio: \(reason)"
        case .notPCM(let path, let format): "\(path): not a PCM WAV (\(format)); convert it, e.g. sox in.wav -b 16 out.wav"
        case .empty(let path): "\(path): holds no audio"
        case .resampler(let message): "resampler (libsoxr): \(message)"
        case .cannotWrite(let path, let reason): "\(path): cannot write audio: \(reason)"
        case .library(let name, let reason): "cannot load \(name) to read or write audio files (Debian package libsndfile1): \(reason)"
        }
    }
}

public enum AudioFile {
    /// Reads a WAV (or any file libsndfile knows) holding linear PCM or float samples, of any rate and channel
    /// count, mixes it to mono and resamples it to `targetRate` with libsoxr.
    public static func readMono(path: String, targetRate: Int = SpeakerAudio.sampleRate) throws(AudioFileError) -> MonoAudio {
        try readMono(path: path, targetRate: targetRate, library: Sndfile.soname)
    }

    /// `readMono` with libsndfile loaded from `library` (tests name one that is not there).
    static func readMono(path: String, targetRate: Int, library: String) throws(AudioFileError) -> MonoAudio {
        let sndfile = try Sndfile(library: library)
        var info = SF_INFO()
        guard let file = sndfile.open(path, Int32(SFM_READ), &info) else {
            throw .cannotOpen(path: path, reason: sndfile.lastError())
        }
        defer { _ = sndfile.close(file) }
        return try decode(file, info, sndfile: sndfile, name: path, targetRate: targetRate)
    }

    /// `readMono` of a file held in memory (Houndify's spoken answer arrives as a WAV inside its JSON), read
    /// through libsndfile's virtual I/O: nothing is written to disk, so nothing of it can be left behind, and
    /// no descriptor exists for a child process to inherit. `name` stands for the path in errors.
    public static func readMono(bytes: [UInt8], name: String, targetRate: Int = SpeakerAudio.sampleRate) throws(AudioFileError) -> MonoAudio {
        // withUnsafeBytes rethrows untyped errors, so the typed one comes out as a Result.
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(AudioFileError) in try readMono(bytes: buffer, name: name, targetRate: targetRate) }
        }
        return try result.get()
    }

    /// The same, of bytes the caller holds (a `Data`'s, say), read where they are: no copy is made.
    public static func readMono(bytes: UnsafeRawBufferPointer, name: String, targetRate: Int = SpeakerAudio.sampleRate) throws(AudioFileError) -> MonoAudio {
        try readMono(bytes: bytes, name: name, targetRate: targetRate, library: Sndfile.soname)
    }

    static func readMono(bytes: UnsafeRawBufferPointer, name: String, targetRate: Int, library: String) throws(AudioFileError) -> MonoAudio {
        let sndfile = try Sndfile(library: library)
        guard !bytes.isEmpty else { throw .empty(path: name) }
        var io = SF_VIRTUAL_IO(get_filelen: MemoryFile.length, seek: MemoryFile.seek, read: MemoryFile.read,
                               write: MemoryFile.write, tell: MemoryFile.tell)
        var memory = MemoryFile(bytes: bytes, position: 0)
        return try withUnsafeMutablePointer(to: &memory) { (memoryPointer) throws(AudioFileError) -> MonoAudio in
            var info = SF_INFO()
            guard let file = sndfile.openVirtual(&io, Int32(SFM_READ), &info, UnsafeMutableRawPointer(memoryPointer)) else {
                throw .cannotOpen(path: name, reason: sndfile.lastError())
            }
            defer { _ = sndfile.close(file) }
            return try decode(file, info, sndfile: sndfile, name: name, targetRate: targetRate)
        }
    }

    /// The samples of an open file, mixed to mono and resampled: what both `readMono`s share.
    private static func decode(_ file: OpaquePointer, _ info: SF_INFO, sndfile: borrowing Sndfile, name: String,
                               targetRate: Int) throws(AudioFileError) -> MonoAudio {
        let subtype = info.format & Int32(SF_FORMAT_SUBMASK)
        let linear: Set<Int32> = [Int32(SF_FORMAT_PCM_S8), Int32(SF_FORMAT_PCM_U8), Int32(SF_FORMAT_PCM_16),
                                  Int32(SF_FORMAT_PCM_24), Int32(SF_FORMAT_PCM_32), Int32(SF_FORMAT_FLOAT),
                                  Int32(SF_FORMAT_DOUBLE)]
        guard linear.contains(subtype) else { throw .notPCM(path: name, format: formatName(subtype)) }
        guard info.frames > 0, info.channels > 0 else { throw .empty(path: name) }
        let channels = Int(info.channels)
        var interleaved = [Float](repeating: 0, count: Int(info.frames) * channels)
        let read = interleaved.withUnsafeMutableBufferPointer { sndfile.readFloatFrames(file, $0.baseAddress, info.frames) }
        guard read > 0 else { throw .empty(path: name) }
        var mono = [Float](repeating: 0, count: Int(read))
        for frame in 0..<Int(read) {
            var sum: Float = 0
            for channel in 0..<channels { sum += interleaved[frame * channels + channel] }
            mono[frame] = sum / Float(channels)
        }
        let resampled = try resample(mono, from: Int(info.samplerate), to: targetRate)
        return MonoAudio(samples: resampled.map(floatToInt16), sampleRate: targetRate)
    }

    /// Resamples a whole buffer with libsoxr (high quality).
    public static func resample(_ input: [Float], from inputRate: Int, to outputRate: Int) throws(AudioFileError) -> [Float] {
        guard inputRate != outputRate else { return input }
        guard inputRate > 0 else { throw .resampler("input rate \(inputRate) Hz") }
        let capacity = Int((Double(input.count) * Double(outputRate) / Double(inputRate)).rounded(.up)) + 16
        var output = [Float](repeating: 0, count: capacity)
        var produced = 0
        let message = input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                soxr_oneshot(Double(inputRate), Double(outputRate), 1, inBuf.baseAddress, inBuf.count, nil,
                             outBuf.baseAddress, outBuf.count, &produced, nil, nil, nil)
            }
        }
        if let message { throw .resampler(String(cString: message)) }
        return Array(output.prefix(produced))
    }

    /// Writes 16-bit mono PCM as a WAV file.
    public static func writeWAV(_ audio: MonoAudio, to path: String) throws(AudioFileError) {
        var info = SF_INFO()
        info.samplerate = Int32(audio.sampleRate)
        info.channels = 1
        info.format = Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_PCM_16)
        let sndfile = try Sndfile()
        guard let file = sndfile.open(path, Int32(SFM_WRITE), &info) else {
            throw .cannotWrite(path: path, reason: sndfile.lastError())
        }
        let written = audio.samples.withUnsafeBufferPointer { sndfile.writeShorts(file, $0.baseAddress, sf_count_t($0.count)) }
        _ = sndfile.close(file)
        guard written == audio.samples.count else { throw .cannotWrite(path: path, reason: "short write") }
    }

    /// libsndfile scales 16-bit samples by 1/32768 when reading floats; the inverse keeps them exact.
    static func floatToInt16(_ x: Float) -> Int16 {
        Int16(clamping: Int((x * 32768).rounded()))
    }

    static func formatName(_ subtype: Int32) -> String {
        switch subtype {
        case Int32(SF_FORMAT_ULAW): "u-law"
        case Int32(SF_FORMAT_ALAW): "A-law"
        case Int32(SF_FORMAT_IMA_ADPCM), Int32(SF_FORMAT_MS_ADPCM): "ADPCM"
        case Int32(SF_FORMAT_GSM610): "GSM 6.10"
        case Int32(SF_FORMAT_MPEG_LAYER_III): "MP3"
        default: "encoding 0x\(String(subtype, radix: 16))"
        }
    }
}

/// The read-only "file" libsndfile's virtual I/O reads (`AudioFile.readMono(bytes:)`): the bytes and a position,
/// reached through the `user_data` pointer its callbacks are given (C callbacks capture nothing).
private struct MemoryFile {
    let bytes: UnsafeRawBufferPointer
    var position: Int

    private static func file(_ userData: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<MemoryFile> {
        userData!.assumingMemoryBound(to: MemoryFile.self)
    }

    static let length: sf_vio_get_filelen = { userData in sf_count_t(file(userData).pointee.bytes.count) }

    static let tell: sf_vio_tell = { userData in sf_count_t(file(userData).pointee.position) }

    /// SEEK_SET, SEEK_CUR or SEEK_END; a position outside the bytes is refused (-1), as lseek refuses one before 0.
    static let seek: sf_vio_seek = { offset, whence, userData in
        let memory = file(userData)
        let base = switch whence {
        case SEEK_SET: 0
        case SEEK_CUR: memory.pointee.position
        case SEEK_END: memory.pointee.bytes.count
        default: -1
        }
        let (target, overflow) = Int(offset).addingReportingOverflow(base)
        guard base >= 0, !overflow, (0...memory.pointee.bytes.count).contains(target) else { return -1 }
        memory.pointee.position = target
        return sf_count_t(target)
    }

    static let read: sf_vio_read = { destination, count, userData in
        let memory = file(userData)
        let available = memory.pointee.bytes.count - memory.pointee.position
        let n = max(0, min(Int(count), available))
        if n > 0, let destination, let source = memory.pointee.bytes.baseAddress {
            destination.copyMemory(from: source + memory.pointee.position, byteCount: n)
        }
        memory.pointee.position += n
        return sf_count_t(n)
    }

    /// Opened for reading only: libsndfile never writes, and would be told nothing was written.
    static let write: sf_vio_write = { _, _, _ in 0 }
}
