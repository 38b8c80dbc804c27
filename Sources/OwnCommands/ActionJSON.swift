public import JSONKit
import SpeakerCore
import Timers

extension OwnAction {
    /// The action as `hound-speaker offline --json` shows it: its kind and its numbers.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["kind": .string(kind.rawValue)]
        func which(_ s: TimerSelection) -> JSONValue {
            switch s {
            case .the: "the"
            case .all: "all"
            case .named(let n): .string("named \(n)")
            case .length(let seconds): .string("length \(seconds) s")
            case .position(let n): .string("position \(n)")
            case .id(let id): .string("id \(id)")
            }
        }
        func clock(_ minute: Int) -> JSONValue {
            let h = minute / 60, m = minute % 60
            return .string((h < 10 ? "0" : "") + "\(h):" + (m < 10 ? "0" : "") + "\(m)")
        }
        switch self {
        case .tellTime, .tellDate, .local: break
        case .client(let action):
            switch action {
            case .run(let command): o["command"] = .string(command)
            case .muteMicrophone: break
            case .volume(let v):
                switch v {
                case .step(let up): o["direction"] = up ? "up" : "down"
                case .by(let n): o["by"] = .int(Int64(n))
                case .to(let n): o["level"] = .int(Int64(n))
                case .mute: break
                }
            case .timer(let t):
                switch t {
                case .set(let seconds, let name): o["seconds"] = .int(Int64(seconds)); o["name"] = .string(name)
                case .addTime(let seconds, let s): o["seconds"] = .int(Int64(seconds)); o["which"] = which(s)
                case .cancel(let s), .timeLeft(let s), .pause(let s), .resume(let s), .reset(let s): o["which"] = which(s)
                }
            case .alarm(let a):
                switch a {
                case .set(let minute, _, let name): o["time"] = clock(minute); o["name"] = .string(name)
                case .cancel(let s):
                    switch s {
                    case .the: o["which"] = "the"
                    case .all: o["which"] = "all"
                    case .named(let n): o["which"] = .string("named \(n)")
                    case .at(let minute): o["which"] = clock(minute)
                    case .id(let id): o["which"] = .string("id \(id)")
                    }
                case .list: break
                }
            }
        }
        return .object(o)
    }
}
