public import FoundationEssentials
public import JSONKit
import FoundationInternationalization
import Platform
import Glibc
import Houndify

/// The local service's small domain: the time and date in the request's TimeZone, a weather answer from a real
/// response fixture, timers, alarms, volume and a phone call as client commands (ClientCommandAnswers), a
/// two-turn "set a timer" ... "for how long?" conversation (to exercise ConversationState and AutoListen), and
/// NoResultCommand for everything else. Answers have the shapes of real HoundServer responses.
public struct AnswerBook: Sendable {
    let weatherFixture: JSONValue?
    let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date = Date.init) {
        self.now = now
        weatherFixture = try? JSONValue(parsing: Data(weatherFixtureJSON.utf8))
    }

    /// The HoundServer object answering `transcript`, given the request's RequestInfo.
    public func answer(transcript: String, requestInfo: [String: JSONValue], voice: Bool, audioSeconds: Double = 0) -> JSONValue {
        let query = transcript.lowercased()
        let previous = requestInfo["ConversationState"]
        let turn = (previous?["LocalServiceTurn"]?.int64Value ?? 0) + 1
        let stamp = Int64(now().timeIntervalSince1970)
        var state: [String: JSONValue] = ["ConversationStateTime": .int(stamp), "LocalServiceTurn": .int(turn)]

        var result: [String: JSONValue]
        if transcript.trimmed(.whitespaces).isEmpty {
            result = noResult()
        } else if let matched = clientMatch(query, requestInfo: requestInfo) {
            result = matched
        } else if previous?["LocalServicePending"]?.stringValue == "TimerDuration", let minutes = Self.number(in: query) {
            // The second turn: the duration alone ("ten minutes"), read in the state the first turn left.
            let words = query.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init)
            let seconds = ClientCommandAnswers.duration(words) ?? minutes * 60
            result = ClientCommandAnswers(query: query, state: state).setTimer(seconds: seconds, title: nil)
        } else if let command = ClientCommandAnswers(query: query, state: state).answer() {
            result = command
        } else if query.contains("timer") {
            result = command("TimerCommand", spoken: "For how long?", written: "For how long?")
            result["AutoListen"] = true
            state["LocalServicePending"] = "TimerDuration"
        } else if query.contains("story") {
            // A long answer: long enough that a person may want to stop it.
            let text = Self.story
            result = command("InformationCommand", spoken: text, written: text)
        } else if query.contains("weather"), let place = Self.position(requestInfo) {
            // The speaker's own position ([location] in its config): the local service has no weather data, so
            // the recorded conditions below, said for where the speaker is and in the units it asked for.
            let metric = requestInfo["UnitPreference"]?.stringValue == "METRIC"
            let degrees = metric ? "29" : "84"
            result = command("WeatherCommand",
                             spoken: "The weather is \(degrees) degrees and mostly cloudy near \(place.spoken).",
                             written: "The weather is \(degrees) \(metric ? "°C" : "°F") and mostly cloudy near \(place.written).")
            if let nugget = weatherNugget(near: place.written, metric: metric) { result["InformationNuggets"] = [nugget] }
        } else if query.contains("weather"), let fixture = weatherFixture?["AllResults"]?[0]?.objectValue {
            // No position in the request: a real recorded answer (Houndify would place the speaker by its address).
            result = fixture
        } else if query.contains("time") {
            let text = "It is \(Self.clockTime(now(), in: zone(requestInfo)))."
            result = command("InformationCommand", spoken: text, written: text)
            result["InformationNuggets"] = [["NuggetKind": "DateAndTime", "SpokenResponse": .string(text)]]
        } else if query.contains("date") || query.contains("day is it") || query.contains("what day") {
            let text = "Today is \(Self.longDate(now(), in: zone(requestInfo)))."
            result = command("InformationCommand", spoken: text, written: text)
            result["InformationNuggets"] = [["NuggetKind": "DateAndTime", "SpokenResponse": .string(text)]]
        } else {
            result = noResult()
        }
        result["ConversationState"] = .object(state)

        let queryID = UUID().uuidString.lowercased()
        var server: [String: JSONValue] = [
            "Format": .string(HoundFormat.resultLegacy), "FormatVersion": "1.0", "Status": "OK",
            "NumToReturn": 1, "AllResults": [.object(result)], "ResultsAreFinal": [true],
            "DomainUsage": [["Domain": "Local Service", "DomainUniqueID": "local", "CreditsUsed": 0]],
            "QueryID": .string(queryID), "ServerGeneratedId": .string(queryID), "RealTime": 0.01, "CpuTime": 0.01,
        ]
        server["Disambiguation"] = [
            "NumToShow": 1,
            "ChoiceData": transcript.isEmpty ? [] : [[
                "Transcription": .string(transcript), "ConfidenceScore": 0.9,
                "FormattedTranscription": .string(transcript), "FixedTranscription": "",
            ]],
        ]
        if voice {
            server["AudioLength"] = .double(audioSeconds)
            server["RealSpeechTime"] = .double(audioSeconds)
            server["CpuSpeechTime"] = .double(audioSeconds / 10)
        }
        return .object(server)
    }

    static let story = "Once upon a time, a small speaker lived on a kitchen shelf. Every morning it told the family the "
        + "weather, the time, and how long to boil the eggs. One day the power went out, and the speaker was quiet "
        + "for a whole afternoon. When the lights came back, it said: I missed you. The family laughed, and from then "
        + "on they said good morning to it every day. And the speaker, in its small way, was happy."

    public static func error(_ message: String) -> JSONValue {
        ["Format": .string(HoundFormat.resultLegacy), "FormatVersion": "1.0", "Status": "Error",
         "ErrorMessage": .string(message), "DomainUsage": [], "QueryID": .string(UUID().uuidString.lowercased())]
    }

    private func command(_ kind: String, spoken: String, written: String) -> [String: JSONValue] {
        ["CommandKind": .string(kind), "SpokenResponse": .string(spoken), "SpokenResponseLong": .string(spoken),
         "WrittenResponse": .string(written), "WrittenResponseLong": .string(written), "AutoListen": false,
         "ViewType": ["Native", "None"]]
    }

    private func noResult() -> [String: JSONValue] {
        var r = command("NoResultCommand", spoken: "", written: "Didn't get that!")
        r["SpokenResponseLong"] = "Didn't get that!"
        return r
    }

    /// The request's TimeZone (ICU's tz database, via FoundationInternationalization), else the system's.
    /// The request's Latitude and Longitude, as words ("48.86 north, 2.35 east") and as written ("48.86° N, 2.35° E").
    /// The recorded answer's weather nugget (conditions and forecasts), placed at `place`, in °C when `metric`;
    /// without its template, whose rows are written in the recording's units.
    func weatherNugget(near place: String, metric: Bool) -> JSONValue? {
        guard case .object(var nugget)? = weatherFixture?["AllResults"]?[0]?["InformationNuggets"]?[0] else { return nil }
        nugget["TemplateData"] = nil
        nugget["Location"] = ["Label": .string(place)]
        return metric ? Self.celsius(.object(nugget)) : .object(nugget)
    }

    /// Every temperature (`{"Units": "F", "Value": x}`) in `value` in degrees Celsius.
    static func celsius(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(var members):
            if members["Units"]?.stringValue == "F", let fahrenheit = members["Value"]?.doubleValue {
                members["Units"] = "C"
                members["WrittenUnits"] = "°C"
                members["Format"] = "Metric"
                members["Value"] = .double(((fahrenheit - 32) * 5 / 9 * 10).rounded() / 10)
                return .object(members)
            }
            return .object(members.mapValues(celsius))
        case .array(let items): return .array(items.map(celsius))
        default: return value
        }
    }

    static func position(_ requestInfo: [String: JSONValue]) -> (spoken: String, written: String)? {
        guard let latitude = requestInfo["Latitude"]?.doubleValue, let longitude = requestInfo["Longitude"]?.doubleValue,
              (-90...90).contains(latitude), (-180...180).contains(longitude) else { return nil }
        let lat = String(cFormat: "%.2f", abs(latitude)), lon = String(cFormat: "%.2f", abs(longitude))
        return ("\(lat) \(latitude < 0 ? "south" : "north"), \(lon) \(longitude < 0 ? "west" : "east")",
                "\(lat)° \(latitude < 0 ? "S" : "N"), \(lon)° \(longitude < 0 ? "W" : "E")")
    }

    private func zone(_ requestInfo: [String: JSONValue]) -> TimeZone {
        requestInfo["TimeZone"]?.stringValue.flatMap(TimeZone.init(identifier:))
            ?? TimeZone(identifier: SystemTimeZone.identifier()) ?? .gmt
    }

    /// "11:05 AM", as Houndify says it (the pattern "h:mm a" in en_US_POSIX, through ICU).
    static func clockTime(_ date: Date, in zone: TimeZone) -> String {
        date.formatted(Date.VerbatimFormatStyle(
            format: "\(hour: .defaultDigits(clock: .twelveHour, hourCycle: .oneBased)):\(minute: .twoDigits) \(dayPeriod: .standard(.abbreviated))",
            locale: Locale(identifier: "en_US_POSIX"), timeZone: zone, calendar: Calendar(identifier: .gregorian)))
    }

    /// "Sunday, November 22, 2026" ("EEEE, MMMM d, yyyy").
    static func longDate(_ date: Date, in zone: TimeZone) -> String {
        date.formatted(Date.VerbatimFormatStyle(
            format: "\(weekday: .wide), \(month: .wide) \(day: .defaultDigits), \(year: .defaultDigits)",
            locale: Locale(identifier: "en_US_POSIX"), timeZone: zone, calendar: Calendar(identifier: .gregorian)))
    }

    static func number(in query: String) -> Int? {
        let words = ["one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                     "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30]
        for token in query.split(whereSeparator: { !$0.isLetter && !$0.isNumber }) {
            if let n = Int(token) { return n }
            if let n = words[String(token)] { return n }
        }
        return nil
    }
}
