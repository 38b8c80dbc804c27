import FoundationEssentials
import Glibc

/// The time zone for a place, when the owner gave its latitude and longitude but no zone: the zone whose principal
/// place (tzdata's zone1970.tab) is nearest. Right away from borders, which is most homes; the setup page sends the
/// phone's own zone first, and the config's `[location] timezone` says it exactly.
public enum TimeZoneGuess {
    public static let table = "/usr/share/zoneinfo/zone1970.tab"

    public static func nearest(latitude: Double, longitude: Double, table path: String = table) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        var best: (distance: Double, zone: String)?
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: "\t")
            guard fields.count >= 3, let place = coordinates(String(fields[1])) else { continue }
            let d = distance(latitude, longitude, place.latitude, place.longitude)
            if best == nil || d < best!.distance { best = (d, String(fields[2])) }
        }
        return best?.zone
    }

    /// ISO 6709 as zone1970.tab writes it: ±DDMM±DDDMM or ±DDMMSS±DDDMMSS.
    static func coordinates(_ text: String) -> (latitude: Double, longitude: Double)? {
        let chars = Array(text)
        guard let split = chars.indices.dropFirst().first(where: { chars[$0] == "+" || chars[$0] == "-" }) else { return nil }
        func angle(_ part: ArraySlice<Character>, degreeDigits: Int) -> Double? {
            guard let sign = part.first, sign == "+" || sign == "-" else { return nil }
            let digits = Array(part.dropFirst())
            guard digits.allSatisfy(\.isNumber), digits.count == degreeDigits + 2 || digits.count == degreeDigits + 4 else { return nil }
            func number(_ range: Range<Int>) -> Double { Double(String(digits[range])) ?? 0 }
            var value = number(0..<degreeDigits) + number(degreeDigits..<degreeDigits + 2) / 60
            if digits.count == degreeDigits + 4 { value += number(degreeDigits + 2..<degreeDigits + 4) / 3600 }
            return sign == "-" ? -value : value
        }
        guard let lat = angle(chars[..<split], degreeDigits: 2), let lon = angle(chars[split...], degreeDigits: 3) else { return nil }
        return (lat, lon)
    }

    /// The central angle between two places (haversine), in radians.
    static func distance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let r = Double.pi / 180
        let dLat = (lat2 - lat1) * r, dLon = (lon2 - lon1) * r
        let a = pow(sin(dLat / 2), 2) + cos(lat1 * r) * cos(lat2 * r) * pow(sin(dLon / 2), 2)
        return 2 * atan2(a.squareRoot(), (1 - a).squareRoot())
    }
}
