import FoundationEssentials
public import JSONKit

/// What a screen's weather card shows, read from Houndify's weather answer (docs/control-api.md, "display"):
/// the `Weather` information nugget, or `NativeData` when it has the same fields. The page draws its own icons
/// from the condition keys (Houndify's images are on the internet, and the screen must work without it).
public enum WeatherCard {
    /// Nil when the result holds no weather.
    public static func read(_ result: JSONValue) -> JSONValue? {
        let nuggets = result["InformationNuggets"]?.arrayValue ?? []
        let source = nuggets.first { $0["NuggetKind"]?.stringValue == "Weather" && isWeather($0) }
            ?? result["NativeData"].flatMap { isWeather($0) ? $0 : nil }
        guard let weather = source else { return nil }
        var card: [String: JSONValue] = [:]
        card["location"] = weather["Location"]?["Label"]
        card["conditions"] = weather["ConditionsShortPhrase"]
        card["key"] = weather["ConditionsImage"]?["Key"]
        card["temperature"] = written(weather["CurrentTemperature"])
        card["feels_like"] = written(weather["FeelsLikeTemperature"])
        card["humidity_pct"] = weather["HumidityPct"]
        let days: [JSONValue] = (weather["DailyForecasts"]?.arrayValue ?? []).prefix(7).map { day in
            var shown: [String: JSONValue] = [:]
            shown["date"] = date(day["ForecastDateAndTime"]?["Date"])
            shown["conditions"] = day["ForecastShortPhrase"] ?? day["Day"]?["IconPhrase"]
            shown["key"] = day["ConditionsImage"]?["Key"] ?? day["Day"]?["ConditionsImage"]?["Key"]
            shown["high"] = written(day["HighTemperature"])
            shown["low"] = written(day["LowTemperature"])
            shown["precipitation_pct"] = day["ProbabilityOfPrecipitationPct"]
            return .object(shown.filter { $0.value != .null })
        }
        if !days.isEmpty { card["days"] = .array(days) }
        card = card.filter { $0.value != .null }
        guard card["temperature"] != nil || card["days"] != nil else { return nil }
        return .object(card)
    }

    static func isWeather(_ value: JSONValue) -> Bool {
        value["CurrentTemperature"] != nil || value["DailyForecasts"] != nil
    }

    /// `{"Value": {"Value": 84, "WrittenUnits": "°F"}}` as "84 °F" (whole degrees).
    static func written(_ measure: JSONValue?) -> JSONValue? {
        // No reading beyond a million degrees is a temperature, and Int(_:) would trap on 1e300 from the service.
        guard let value = measure?["Value"], let number = value["Value"]?.doubleValue, abs(number) < 1_000_000 else { return nil }
        let units = value["WrittenUnits"]?.stringValue ?? ""
        let whole = Int(number.rounded())
        return .string(units.isEmpty ? "\(whole)" : "\(whole) \(units)")
    }

    /// `{"Year": 2019, "Month": 8, "DayOfMonth": 27}` as "2019-08-27" (the page names the weekday).
    static func date(_ value: JSONValue?) -> JSONValue? {
        guard let year = value?["Year"]?.int64Value, let month = value?["Month"]?.int64Value,
              let day = value?["DayOfMonth"]?.int64Value else { return nil }
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return .string("\(year)-\(two(month))-\(two(day))")
    }
}
