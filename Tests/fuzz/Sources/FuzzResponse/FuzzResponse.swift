// libFuzzer target: one JSON document as Houndify's result, through what the speaker does with it
// (Sources/Houndify/Models.swift, Sources/JSONKit/JSONValue.swift, Sources/Houndify/ConversationStore.swift).
//
// Besides "no crash", it checks that a value the speaker keeps and sends back (ConversationState, RequestInfo)
// survives its own encoding: asciiJSON() parses back to the same value.
import FoundationEssentials
import Houndify
import JSONKit

func fuzzResponse(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let raw = Data(UnsafeBufferPointer(start: start, count: count))
    guard let json = try? JSONValue(parsing: raw) else { return 0 }

    let encoded = json.asciiJSON()
    if !encoded.utf8.allSatisfy({ $0 < 0x80 }) { fatalError("asciiJSON() wrote a byte that is not ASCII") }
    guard let again = try? JSONValue(parsing: Data(encoded.utf8)) else {
        fatalError("asciiJSON() wrote JSON that does not parse: \(encoded.prefix(200))")
    }
    if !sameValue(again, json) {
        fatalError("asciiJSON() does not round-trip: \(encoded.prefix(200))")
    }

    if let response = try? HoundServerResponse(json: json, raw: raw) {
        _ = response.best?.textToSpeak
        _ = response.transcript
        if let best = response.best {
            let store = ConversationStore()
            try? store.update(from: best)
            _ = store.current?.asciiJSON()
        }
    }
    _ = try? HoundMessage.parse(raw)
    return 0
}

/// Equal as JSON: an integer-valued double is written as an integer and comes back as .int, so numbers compare
/// by value; JSON has no NaN or infinity (the decoder never makes them).
private func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.int, .double), (.double, .int), (.double, .double): return a.doubleValue == b.doubleValue
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(sameValue)
    case (.object(let x), .object(let y)):
        return x.count == y.count && x.allSatisfy { key, value in y[key].map { sameValue(value, $0) } ?? false }
    default: return a == b
    }
}
