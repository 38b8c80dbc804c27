public import BoardCore
import CPosix
import Glibc
import Synchronization

/// Where an LED ring's bytes go: an SPI device, or in tests a recorder of every byte.
public protocol PixelBus: Sendable {
    /// Sends `bytes` as one transfer.
    func write(_ bytes: [UInt8]) throws(BoardError)
}

/// An spidev device (`/dev/spidevB.C`) opened for writing, in SPI mode 0, 8 bits a word, at a set clock.
public final class SPIDevice: PixelBus {
    public let path: String
    public let speedHz: UInt32
    /// -1 once closed: a write after `close` fails instead of reaching a descriptor number reused since.
    private let descriptor: Mutex<Int32>

    /// Opens and configures `path`; `speedHz` clamped to 1...UInt32.max.
    public init(path: String, speedHz: Int) throws(BoardError) {
        self.path = path
        self.speedHz = UInt32(clamping: max(speedHz, 1))
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw Self.cannotOpen(path, errno: errno) }
        var failed: Int32 = 0
        let code = hs_spi_configure(fd, 0, 8, self.speedHz, &failed)
        guard code == 0 else {
            Glibc.close(fd)
            throw Self.cannotConfigure(path, speedHz: self.speedHz, errno: code, step: failed)
        }
        descriptor = Mutex(fd)
    }

    /// `/dev/spidev<bus>.<chipSelect>`.
    public convenience init(bus: Int, chipSelect: Int, speedHz: Int) throws(BoardError) {
        try self.init(path: "/dev/spidev\(bus).\(chipSelect)", speedHz: speedHz)
    }

    deinit { close() }

    public func write(_ bytes: [UInt8]) throws(BoardError) {
        let code: Int32 = descriptor.withLock { fd in
            guard fd >= 0 else { return EBADF }
            return bytes.withUnsafeBufferPointer { buffer in
                hs_spi_write(fd, buffer.baseAddress, UInt32(clamping: buffer.count), speedHz)
            }
        }
        guard code == 0 else {
            throw BoardError("\(path): SPI write of \(bytes.count) bytes failed: \(String(cString: strerror(code)))")
        }
    }

    /// Closes the device (again: nothing).
    public func close() {
        descriptor.withLock { fd in
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }

    static func cannotOpen(_ path: String, errno code: Int32) -> BoardError {
        let hint = code == ENOENT ? " (enable SPI: dtparam=spi=on in /boot/firmware/config.txt, then reboot)" :
            code == EACCES || code == EPERM ? " (permission: add the user to the spi group)" : ""
        return BoardError("\(path): \(String(cString: strerror(code)))\(hint)",
                          isConfiguration: code == ENOENT || code == EACCES || code == EPERM)
    }

    static func cannotConfigure(_ path: String, speedHz: UInt32, errno code: Int32, step: Int32) -> BoardError {
        let reason = String(cString: strerror(code))
        // ENOTTY: the path is some other file or device, which takes no SPI ioctl.
        if code == ENOTTY { return BoardError("\(path): not an SPI device (\(reason))", isConfiguration: true) }
        let what = step == 1 ? "SPI mode 0" : step == 2 ? "8 bits per word" : "a clock of \(speedHz) Hz"
        return BoardError("\(path): cannot set \(what): \(reason)", isConfiguration: code == EINVAL)
    }
}

/// An spidev device opened when a frame is first written, and again after a write fails: a ring whose device is not
/// there yet (SPI not enabled, a driver still loading) or goes away is tried again frame by frame, and the speaker
/// goes on without it meanwhile (BoardRunner tells the failure once and backs off).
public final class ReopeningSPIDevice: PixelBus {
    public let path: String
    public let speedHz: Int
    private let device = Mutex<SPIDevice?>(nil)

    public init(path: String, speedHz: Int) {
        self.path = path
        self.speedHz = speedHz
    }

    public func write(_ bytes: [UInt8]) throws(BoardError) {
        try device.withLock { (open: inout SPIDevice?) throws(BoardError) in
            let spi: SPIDevice
            if let open { spi = open } else { spi = try SPIDevice(path: path, speedHz: speedHz) }
            open = spi
            do throws(BoardError) { try spi.write(bytes) } catch {
                spi.close()
                open = nil
                throw error
            }
        }
    }
}

/// An APA102 ring: colours in, frames out on its bus at the profile's brightness.
public struct APA102Ring: Sendable {
    public let profile: LEDRingProfile
    public let bus: any PixelBus

    /// A ring on `bus` (a test's recorder, or an `SPIDevice` opened elsewhere).
    public init(profile: LEDRingProfile, bus: any PixelBus) {
        self.profile = profile
        self.bus = bus
    }

    /// The profile's spidev device, opened at the first frame (`ReopeningSPIDevice`); a profile with problems is
    /// refused. The power line (`profile.powerLine`) is not driven here.
    public init(profile: LEDRingProfile) throws(BoardError) {
        let problems = profile.problems
        guard problems.isEmpty else {
            throw BoardError("LED ring (\(profile.name)): \(problems.joined(separator: "; "))", isConfiguration: true)
        }
        self.init(profile: profile, bus: ReopeningSPIDevice(path: profile.devicePath, speedHz: profile.speedHz))
    }

    /// Shows `colors` (first pixel first): missing pixels dark, any beyond the ring's count dropped; at
    /// `brightness` (0...31), or the profile's.
    public func show(_ colors: [PixelColor], brightness: Int? = nil) throws(BoardError) {
        let n = min(max(profile.pixelCount, 0), LEDRingProfile.pixelCountRange.upperBound)
        var pixels = Array(colors.prefix(n))
        pixels.append(contentsOf: repeatElement(.black, count: n - pixels.count))
        try bus.write(APA102.frame(pixels, brightness: brightness ?? profile.brightness))
    }

    /// Shows `animation` as it is `elapsed` after its state began, and returns when it next changes (nil: never
    /// by itself), for the driver to sleep until.
    @discardableResult
    public func show(_ animation: RingAnimation, at elapsed: Duration, brightness: Int? = nil) throws(BoardError) -> Duration? {
        try show(animation.colors(at: elapsed), brightness: brightness)
        return animation.nextChange(after: elapsed)
    }

    /// Every pixel dark.
    public func clear() throws(BoardError) {
        try show([])
    }
}
