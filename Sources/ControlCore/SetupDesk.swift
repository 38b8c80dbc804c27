public import JSONKit

/// Setup mode's front desk (issue #64): the six-digit code the speaker says aloud and shows, the tries against it,
/// and what `POST /api/setup` asks for. Pure: the server holds one, with the clock it is given.
///
/// A wrong code counts; the fifth in a row retires the code, makes a new one (which the speaker says), and turns
/// every request away for `lockout` seconds, so the code cannot be guessed from the network (five tries a minute
/// against a million codes). The code also changes once it has been used and at every start.
public struct SetupDesk: Sendable {
    public static let triesPerCode = 5
    public static let lockout = 60.0

    public private(set) var code: String
    public private(set) var wrongTries = 0
    public private(set) var lockedUntil: Double?
    public private(set) var done = false
    private let makeCode: @Sendable () -> String

    public init(makeCode: @escaping @Sendable () -> String = SetupDesk.randomCode) {
        self.makeCode = makeCode
        code = makeCode()
    }

    /// Six digits from the system's random source.
    public static func randomCode() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<6).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) })
    }

    /// "4 8 1 5 2 7": the digits one by one, as the speaker says them.
    public static func spoken(_ code: String) -> String { code.map(String.init).joined(separator: " ") }

    public enum Admission: Sendable, Equatable {
        case granted
        case wrongCode(triesLeft: Int)
        /// Too many wrong codes: a new code was made (`newCode`, to be said) or one is already waited for.
        case tooMany(retryAfter: Int, newCode: String?)
        case alreadyDone
    }

    /// Checks `offered` at time `now` (seconds, monotonic).
    public mutating func admit(_ offered: String, now: Double) -> Admission {
        if done { return .alreadyDone }
        if let until = lockedUntil {
            if now < until { return .tooMany(retryAfter: max(1, Int((until - now).rounded(.up))), newCode: nil) }
            lockedUntil = nil
        }
        if Self.same(offered, code) {
            wrongTries = 0
            return .granted
        }
        wrongTries += 1
        guard wrongTries >= Self.triesPerCode else { return .wrongCode(triesLeft: Self.triesPerCode - wrongTries) }
        wrongTries = 0
        code = makeCode()
        lockedUntil = now + Self.lockout
        return .tooMany(retryAfter: Int(Self.lockout), newCode: code)
    }

    /// The credentials are saved: the code is used up, and the desk closes.
    public mutating func finish() {
        done = true
        code = makeCode()
    }

    /// Compared in time that does not depend on where the first difference is.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// What the setup page sends: `{"code", "client_id", "client_key", "latitude", "longitude", "timezone"}`. The
/// location is optional (both or neither), as in the config; numbers may come as JSON numbers or as text.
public struct SetupForm: Sendable, Equatable {
    public var code: String
    public var clientID: String
    public var clientKey: String
    public var latitude: Double?
    public var longitude: Double?
    public var timezone: String

    public init(code: String, clientID: String, clientKey: String, latitude: Double? = nil, longitude: Double? = nil, timezone: String = "") {
        self.code = code
        self.clientID = clientID
        self.clientKey = clientKey
        self.latitude = latitude
        self.longitude = longitude
        self.timezone = timezone
    }

    /// The form from the request's JSON, or the problem in words for the page.
    public static func parse(_ json: JSONValue) -> Result<SetupForm, SetupProblem> {
        guard case .object = json else { return .failure(SetupProblem("The request must be a JSON object.")) }
        func text(_ key: String) -> String { (json[key]?.stringValue ?? "").trimmingWhitespace }
        func number(_ key: String, _ name: String) -> Result<Double?, SetupProblem> {
            switch json[key] {
            case nil, .null?: return .success(nil)
            case .string(let s)? where s.trimmingWhitespace.isEmpty: return .success(nil)
            case .string(let s)?:
                guard let value = Double(s.trimmingWhitespace), value.isFinite else { return .failure(SetupProblem("The \(name) must be a number.")) }
                return .success(value)
            case let value?:
                guard let d = value.doubleValue, d.isFinite else { return .failure(SetupProblem("The \(name) must be a number.")) }
                return .success(d)
            }
        }
        let code = text("code").filter { $0 != " " }
        guard code.count == 6, code.allSatisfy(\.isASCIIDigit) else {
            return .failure(SetupProblem("The code is the six digits the speaker said.", status: 403))
        }
        let id = text("client_id"), key = text("client_key")
        guard !id.isEmpty else { return .failure(SetupProblem("The client ID is missing: copy it from your client's page on the Houndify dashboard.")) }
        guard !key.isEmpty else { return .failure(SetupProblem("The client key is missing: copy it from your client's page on the Houndify dashboard.")) }
        let latitude: Double?, longitude: Double?
        switch number("latitude", "latitude") { case .success(let v): latitude = v; case .failure(let p): return .failure(p) }
        switch number("longitude", "longitude") { case .success(let v): longitude = v; case .failure(let p): return .failure(p) }
        guard (latitude == nil) == (longitude == nil) else {
            return .failure(SetupProblem("Give both the latitude and the longitude, or neither."))
        }
        return .success(SetupForm(code: code, clientID: id, clientKey: key, latitude: latitude, longitude: longitude, timezone: text("timezone")))
    }
}

/// A request turned down, in words for the page, with its HTTP status.
public struct SetupProblem: Error, Sendable, Equatable {
    public var message: String
    public var status: Int
    /// Seconds before asking again (429).
    public var retryAfter: Int?

    public init(_ message: String, status: Int = 400, retryAfter: Int? = nil) {
        self.message = message
        self.status = status
        self.retryAfter = retryAfter
    }

    /// What the desk's refusal says.
    public static func refused(_ admission: SetupDesk.Admission) -> SetupProblem? {
        switch admission {
        case .granted: nil
        case .wrongCode(let left):
            SetupProblem("That is not the code the speaker said. \(left) \(left == 1 ? "try" : "tries") left before it makes a new one.", status: 403)
        case .tooMany(let seconds, _):
            SetupProblem("Too many wrong codes. The speaker has a new one (it says it, and shows it on its screen); try again in \(seconds) seconds.",
                         status: 429, retryAfter: seconds)
        case .alreadyDone:
            SetupProblem("The speaker is set up already.", status: 409)
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

extension String {
    var trimmingWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
