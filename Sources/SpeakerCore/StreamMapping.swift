/// An async sequence's elements, transformed and filtered, as an AsyncStream pulled by its one reader (no task of
/// its own: each `next()` of the result pulls the source). For the adapters that turn a driver's stream into a
/// port's (the Houndify search's events, the board's intents).
package func mapping<Element: Sendable, Output: Sendable>(_ source: AsyncStream<Element>,
                                                   _ transform: @escaping @Sendable (Element) -> Output?) -> AsyncStream<Output> {
    AsyncStream(unfolding: {
        // A fresh iterator each time reads on where the last left off: an AsyncStream's iterator keeps nothing of
        // its own (the stream's storage has the buffer), and `unfolding` is the one reader the stream allows.
        var iterator = source.makeAsyncIterator()
        while let element = await iterator.next() {
            if let output = transform(element) { return output }
        }
        return nil
    })
}
