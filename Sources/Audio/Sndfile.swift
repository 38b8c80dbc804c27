import CSndfile
import Glibc

/// libsndfile, loaded for one file's reading or writing and unloaded after it.
///
/// The speaker reads its earcons once at start and nothing else, and libsndfile brings its codec libraries
/// (FLAC, Vorbis, Opus, mpg123, LAME) along: kept mapped for the speaker's whole life they held about 0.9 MB
/// resident for nothing (BENCHMARKS.md, peak memory of `run`). So the library is opened with dlopen when a
/// file is read or written, and closed when that is done. The types and constants still come from sndfile.h
/// (CSndfile, which no longer links the library).
struct Sndfile: ~Copyable {
    /// The soname of Debian's libsndfile1.
    static let soname = "libsndfile.so.1"

    typealias Open = @convention(c) (UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<SF_INFO>?) -> OpaquePointer?
    typealias OpenVirtual = @convention(c) (UnsafeMutablePointer<SF_VIRTUAL_IO>?, Int32, UnsafeMutablePointer<SF_INFO>?,
                                            UnsafeMutableRawPointer?) -> OpaquePointer?
    typealias Close = @convention(c) (OpaquePointer?) -> Int32
    typealias StrError = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    typealias ReadFloatFrames = @convention(c) (OpaquePointer?, UnsafeMutablePointer<Float>?, sf_count_t) -> sf_count_t
    typealias WriteShorts = @convention(c) (OpaquePointer?, UnsafePointer<Int16>?, sf_count_t) -> sf_count_t

    private let handle: UnsafeMutableRawPointer
    let open: Open
    let openVirtual: OpenVirtual
    let close: Close
    let strerror: StrError
    let readFloatFrames: ReadFloatFrames
    let writeShorts: WriteShorts

    /// Loads `library` (a soname or a path) and looks up the six functions used here; an error names the library
    /// and what the dynamic loader said.
    init(library: String = Sndfile.soname) throws(AudioFileError) {
        guard let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) else {
            throw .library(name: library, reason: Sndfile.loaderError())
        }
        func symbol<F>(_ name: String, as _: F.Type) -> F? {
            dlsym(handle, name).map { unsafeBitCast($0, to: F.self) }
        }
        guard let open = symbol("sf_open", as: Open.self), let openVirtual = symbol("sf_open_virtual", as: OpenVirtual.self),
              let close = symbol("sf_close", as: Close.self),
              let strerror = symbol("sf_strerror", as: StrError.self),
              let readFloatFrames = symbol("sf_readf_float", as: ReadFloatFrames.self),
              let writeShorts = symbol("sf_write_short", as: WriteShorts.self) else {
            let reason = Sndfile.loaderError()
            dlclose(handle)
            throw .library(name: library, reason: reason)
        }
        (self.handle, self.open, self.openVirtual, self.close, self.strerror) = (handle, open, openVirtual, close, strerror)
        (self.readFloatFrames, self.writeShorts) = (readFloatFrames, writeShorts)
    }

    deinit { dlclose(handle) }

    /// libsndfile's message for the last failed `sf_open` or `sf_open_virtual`.
    func lastError() -> String {
        strerror(nil).map { String(cString: $0) } ?? "unknown error"
    }

    private static func loaderError() -> String {
        dlerror().map { String(cString: $0) } ?? "unknown error"
    }
}
