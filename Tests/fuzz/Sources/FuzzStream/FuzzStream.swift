// libFuzzer target: Houndify's response stream, cut into reads as libcurl might, through the scanner and the
// message parser the client uses (Sources/Houndify/HoundifyClient.swift, transferReceived and handle).
//
// Input: the first byte seeds where the stream is cut into reads; the rest is the stream. Besides "no crash",
// it checks that the cuts do not matter: the same messages, or the same error, as when the stream arrives in one
// read. A difference stops the fuzzer (fatalError) with the input saved.
import FoundationEssentials
import Houndify

func fuzzStream(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    guard count > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    let seed = Int(bytes[0])
    let stream = Array(bytes.dropFirst())
    // A small limit, so that "a message is too large" is reached by inputs of the size libFuzzer makes.
    let limit = 512

    var whole = JSONStreamScanner(maxMessageBytes: limit)
    let expected: Result<[Data], JSONStreamScanner.ScanError>
    do throws(JSONStreamScanner.ScanError) { expected = .success(try whole.feed(stream)) } catch { expected = .failure(error) }

    var cut = JSONStreamScanner(maxMessageBytes: limit)
    var messages: [Data] = []
    var failure: JSONStreamScanner.ScanError?
    var offset = 0
    var step = seed
    while offset < stream.count {
        step = (step &* 37 &+ 11) & 0xFF
        let length = min(stream.count - offset, 1 + step % 23)
        do throws(JSONStreamScanner.ScanError) {
            messages += try cut.feed(stream[offset..<offset + length])
        } catch {
            failure = error
            break
        }
        offset += length
    }
    switch expected {
    case .success(let all):
        if failure != nil || all != messages { fatalError("cutting the stream into reads changed what was scanned") }
        if whole.hasPartialMessage != cut.hasPartialMessage { fatalError("cutting the stream changed hasPartialMessage") }
    case .failure(let error):
        // Cut into reads, the scanner may have returned messages before the bad byte; the error must be the same.
        if failure != error { fatalError("cutting the stream into reads changed the error: \(error) vs \(String(describing: failure))") }
    }

    for raw in messages {
        guard let message = try? HoundMessage.parse(raw) else { continue }
        switch message {
        case .partialTranscript(let partial):
            _ = partial.json
        case .result(let response):
            // What the speaker reads from a result: the words to say, the transcript, the conversation state.
            _ = response.best?.textToSpeak
            _ = response.best?.conversationState?.asciiJSON()
            _ = response.transcript
            _ = response.isError
        case .other(_, let json):
            _ = json.asciiJSON()
        }
    }
    return 0
}
