import Assembly
import Testing
import Timers

/// The speaker's local time: the configured zone, which setup mode's page may change while the speaker runs
/// (alarms and "what time is it" follow at once), else the system's.
@Suite struct SpeakerCalendarTests {
    /// 2026-01-15 12:00 UTC and 2026-07-15 12:00 UTC.
    let winter: WallTime = 1_768_478_400
    let summer: WallTime = 1_784_116_800

    @Test func theConfiguredZoneWithItsDaylightSaving() {
        let calendar = SpeakerCalendar(zone: "Europe/London")
        #expect(calendar.utcOffset(at: winter) == 0)
        #expect(calendar.utcOffset(at: summer) == 3600)
        #expect(CivilDate.local(summer, calendar).minute == 13 * 60)
    }

    @Test func aZoneSetWhileRunningTakesEffectAtOnce() {
        let calendar = SpeakerCalendar(zone: "Europe/London")
        #expect(calendar.set(zone: "Asia/Tokyo"))
        #expect(calendar.utcOffset(at: winter) == 9 * 3600)
        #expect(calendar.set(zone: "America/New_York"))
        #expect(calendar.utcOffset(at: winter) == -5 * 3600 && calendar.utcOffset(at: summer) == -4 * 3600)
    }

    @Test func noZoneOrAnUnknownOneIsTheSystems() {
        let system = SystemCalendar()
        let calendar = SpeakerCalendar(zone: "Asia/Tokyo")
        #expect(!calendar.set(zone: "Nowhere/Atlantis"))
        #expect(calendar.utcOffset(at: summer) == system.utcOffset(at: summer))
        #expect(calendar.set(zone: "Asia/Tokyo") && calendar.utcOffset(at: summer) == 9 * 3600)
        #expect(calendar.set(zone: ""))
        #expect(calendar.utcOffset(at: summer) == system.utcOffset(at: summer))
    }
}
