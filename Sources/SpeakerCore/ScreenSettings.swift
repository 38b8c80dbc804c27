/// The kiosk screen's brightness (`[screen]` in config/speaker.toml): read by the config, and the core's own setting
/// (`Speaker.Settings.screen`), so the defaults live here only.
public struct ScreenSettings: Sendable, Equatable {
    /// Seconds of quiet (ready, nothing ringing) before the screen dims; 0: never.
    public var dimAfter = 120.0
    /// Brightness when dimmed, 1-100 percent of full (never 0: dimmed, not off).
    public var dimLevel = 10
    /// A sysfs backlight directory (`/sys/class/backlight/NAME`) the speaker sets; "": the page dims its picture.
    public var backlight = ""

    /// Each value not given keeps its default (written once, above).
    public init(dimAfter: Double? = nil, dimLevel: Int? = nil, backlight: String? = nil) {
        if let dimAfter { self.dimAfter = dimAfter }
        if let dimLevel { self.dimLevel = dimLevel }
        if let backlight { self.backlight = backlight }
    }

    /// `dimAfter` as the loop's timer takes it; nil: the screen never dims.
    public var dimAfterDuration: Duration? { dimAfter > 0 ? .milliseconds(Int64(dimAfter * 1000)) : nil }
}
