/// One pixel's colour, 0-255 for each of red, green and blue (before the ring's global brightness).
public struct PixelColor: Sendable, Hashable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// From any integers, each clamped to 0...255 (a colour computed out of range is never a crash).
    public init(clamping red: Int, _ green: Int, _ blue: Int) {
        self.red = UInt8(clamping: red)
        self.green = UInt8(clamping: green)
        self.blue = UInt8(clamping: blue)
    }

    public static let black = PixelColor(red: 0, green: 0, blue: 0)

    /// This colour at `level` 255ths of its intensity (level clamped to 0...255), rounded to the nearest.
    public func scaled(_ level: Int) -> PixelColor {
        let l = min(max(level, 0), 255)
        func scale(_ c: UInt8) -> Int { (Int(c) * l + 127) / 255 }
        return PixelColor(clamping: scale(red), scale(green), scale(blue))
    }

    public var isDark: Bool { red == 0 && green == 0 && blue == 0 }

    /// `#rrggbb`, as a test's failure shows it.
    public var description: String {
        let digits: [Character] = Array("0123456789abcdef")
        var text = "#"
        for byte in [red, green, blue] {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return text
    }
}

/// The bytes an APA102 (DotStar) chain takes on SPI, mode 0, most significant bit first.
///
/// A frame is a start frame of 32 zero bits; then per pixel `0b111` and the 5-bit global brightness, then blue,
/// green and red; then an end frame. Each pixel passes the data on half a clock late, so the last of `n` pixels
/// gets its colour only after n/2 more clock edges than the pixel data: at least ceil(n/16) bytes.
public enum APA102 {
    /// The global brightness field's range (5 bits).
    public static let brightnessRange = 0...31

    /// The first byte of a pixel's frame: `0xE0 | brightness`, brightness clamped to 0...31.
    public static func pixelHeader(brightness: Int) -> UInt8 {
        0xE0 | UInt8(min(max(brightness, brightnessRange.lowerBound), brightnessRange.upperBound))
    }

    /// The end frame's length in bytes for `pixelCount` pixels: max(4, ceil(n/16)), all 0x00.
    ///
    /// ceil(n/16) bytes give the n/2 clock edges the chain needs. Zeros rather than the 0xFF some drivers send:
    /// a pixel past the configured count (a longer ring than the profile says) sees a start frame, not a full
    /// white pixel; and at least 4 zero bytes are the 32-bit frame on which SK9822 clones show what they got.
    public static func endFrameLength(pixelCount: Int) -> Int {
        max(4, (max(pixelCount, 0) + 15) / 16)
    }

    /// The whole frame for `pixels` (first pixel first) at the global `brightness` (clamped to 0...31).
    public static func frame(_ pixels: [PixelColor], brightness: Int) -> [UInt8] {
        let header = pixelHeader(brightness: brightness)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + 4 * pixels.count + endFrameLength(pixelCount: pixels.count))
        bytes.append(contentsOf: [0, 0, 0, 0])
        for p in pixels {
            bytes.append(contentsOf: [header, p.blue, p.green, p.red])
        }
        bytes.append(contentsOf: repeatElement(0, count: endFrameLength(pixelCount: pixels.count)))
        return bytes
    }
}

/// An APA102 LED ring as the config describes it: where it is on SPI, how many pixels, what powers it, how bright.
public struct LEDRingProfile: Sendable, Equatable {
    /// What the board is, for messages ("ReSpeaker 4-Mic Array").
    public var name: String
    /// The spidev bus and chip select: `/dev/spidev<bus>.<chipSelect>`. The APA102 has no chip-select input, so
    /// the chip select only picks the device node (both exist once SPI is enabled).
    public var spiBus: Int
    public var chipSelect: Int
    public var speedHz: Int
    public var pixelCount: Int
    /// A GPIO line (name such as "GPIO5") that must be driven high to power the LEDs; nil: always powered.
    public var powerLine: String?
    /// The APA102's global brightness, 0...31.
    public var brightness: Int

    public init(name: String, spiBus: Int, chipSelect: Int, speedHz: Int, pixelCount: Int, powerLine: String?, brightness: Int) {
        self.name = name
        self.spiBus = spiBus
        self.chipSelect = chipSelect
        self.speedHz = speedHz
        self.pixelCount = pixelCount
        self.powerLine = powerLine
        self.brightness = brightness
    }

    public static let pixelCountRange = 1...255
    /// 100 kHz keeps a 255-pixel frame under a tenth of a second; APA102s are run at up to about 30 MHz.
    public static let speedRange = 100_000...32_000_000
    public static let spiNumberRange = 0...255

    /// Seeed's ReSpeaker 2-Mics Pi HAT: three pixels on SPI0's MOSI and SCLK, always powered. spidev 0.1, as the
    /// public drivers (Seeed's and Rhasspy's) open it.
    public static let respeaker2Mic = LEDRingProfile(name: "ReSpeaker 2-Mics Pi HAT", spiBus: 0, chipSelect: 1, speedHz: 8_000_000,
                                                     pixelCount: 3, powerLine: nil, brightness: 10)
    /// Seeed's ReSpeaker 4-Mic Array for Raspberry Pi: twelve pixels whose power GPIO5 switches on (active high).
    /// Seeed's own code (respeaker/4mics_hat, pixel_ring) and Rhasspy's 4mic_service.py open spidev 0.1 at 8 MHz.
    public static let respeaker4Mic = LEDRingProfile(name: "ReSpeaker 4-Mic Array", spiBus: 0, chipSelect: 1, speedHz: 8_000_000,
                                                     pixelCount: 12, powerLine: "GPIO5", brightness: 10)

    /// The spidev device node.
    public var devicePath: String { "/dev/spidev\(spiBus).\(chipSelect)" }

    /// What is wrong with the profile, one sentence per bad field, each naming it; empty when it is usable.
    public var problems: [String] {
        var problems: [String] = []
        if !Self.spiNumberRange.contains(spiBus) {
            problems.append("the SPI bus must be 0 to 255, not \(spiBus)")
        }
        if !Self.spiNumberRange.contains(chipSelect) {
            problems.append("the SPI chip select must be 0 to 255, not \(chipSelect)")
        }
        if !Self.speedRange.contains(speedHz) {
            problems.append("the SPI speed must be 100000 to 32000000 Hz, not \(speedHz)")
        }
        if !Self.pixelCountRange.contains(pixelCount) {
            problems.append("the pixel count must be 1 to 255, not \(pixelCount)")
        }
        if !APA102.brightnessRange.contains(brightness) {
            problems.append("the brightness must be 0 to 31 (the APA102's 5-bit global brightness), not \(brightness)")
        }
        if let line = powerLine, line.isEmpty || line.contains(where: { $0 == " " || $0 == "\t" || $0 == "\"" }) {
            problems.append("the power line must be a GPIO line name such as \"GPIO5\", not \"\(line)\"")
        }
        return problems
    }
}

/// What the owner set for an LED ring (the control API's `ring`, Home Assistant's light): shown or dark, and how
/// bright, in percent of the APA102's full global brightness.
public struct RingSetting: Sendable, Equatable {
    /// Off: the ring stays dark whatever the speaker does (a bedroom at night).
    public var on: Bool
    /// 1...100.
    public var percent: Int

    public static let percentRange = 1...100

    /// `percent` clamped to 1...100.
    public init(on: Bool, percent: Int) {
        self.on = on
        self.percent = min(max(percent, Self.percentRange.lowerBound), Self.percentRange.upperBound)
    }

    /// A profile's brightness (0...31) as a percent, for the setting a ring starts with.
    public init(brightness: Int) {
        let level = min(max(brightness, APA102.brightnessRange.lowerBound), APA102.brightnessRange.upperBound)
        self.init(on: level > 0, percent: (level * 100 + 15) / 31)
    }

    /// The APA102's global brightness for it: 0 when off, else at least 1 (1 % is still a light).
    public var brightness: Int {
        on ? max(1, (percent * APA102.brightnessRange.upperBound + 50) / 100) : 0
    }
}
