/// An async sequence's elements, transformed and filtered, as an AsyncStream pulled by its one reader (no task of
/// its own: each `next()` of the result pulls the source). For the adapters that turn a driver's stream into a
/// port's (the Houndify search's events, the board's intents).
package func mapping<Element: Sendable, Output: Sendable>(_ source: AsyncStream<Element>,
                                                   _ transform: @escaping @Sendable (Element) -> Output?) -> AsyncStream<Output> {
    let pulled = PulledStream(source)
    return AsyncStream(unfolding: {
        while let element = await pulled.next() {
            if let output = transform(element) { return output }
        }
        return nil
    })
}

/// One reader pulls at a time (AsyncStream allows no more), so the iterator is never used concurrently.
private final class PulledStream<Element: Sendable>: @unchecked Sendable {
    private var iterator: AsyncStream<Element>.Iterator
    init(_ stream: AsyncStream<Element>) { iterator = stream.makeAsyncIterator() }
    func next() async -> Element? { await iterator.next() }
}
