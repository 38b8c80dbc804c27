import Testing
@testable import SpeakerConfig

/// The zone nearest a place, from tzdata's zone1970.tab (setup mode, when the page sends no zone).
@Suite struct TimeZoneGuessTests {
    @Test func placesGetTheirZone() {
        #expect(TimeZoneGuess.nearest(latitude: 51.5074, longitude: -0.1278) == "Europe/London")
        #expect(TimeZoneGuess.nearest(latitude: 48.8566, longitude: 2.3522) == "Europe/Paris")
        #expect(TimeZoneGuess.nearest(latitude: 37.3875, longitude: -122.0575) == "America/Los_Angeles")
        #expect(TimeZoneGuess.nearest(latitude: -33.8688, longitude: 151.2093) == "Australia/Sydney")
        #expect(TimeZoneGuess.nearest(latitude: 35.6762, longitude: 139.6503) == "Asia/Tokyo")
    }

    @Test func theTablesCoordinatesAreRead() {
        #expect(TimeZoneGuess.coordinates("+5130-00007")! == (51.5, -7.0 / 60))
        let h = TimeZoneGuess.coordinates("-332052+1494405")!
        #expect(abs(h.latitude - -(33 + 20.0 / 60 + 52.0 / 3600)) < 1e-9 && abs(h.longitude - (149 + 44.0 / 60 + 5.0 / 3600)) < 1e-9)
        #expect(TimeZoneGuess.coordinates("5130-00007") == nil)
        #expect(TimeZoneGuess.coordinates("+51x0-00007") == nil)
        #expect(TimeZoneGuess.nearest(latitude: 0, longitude: 0, table: "/nonexistent") == nil)
    }
}
