/// Walking a recording as the microphone would deliver it: frames of `frameMS` (20 ms in the speaker), in order.
/// The one place that does it, for the commands that read a file (`voice`, `hotphrase`, `endpoint`), the
/// benchmarks and the tests.
extension MonoAudio {
    /// Samples per frame of `frameMS` at this rate.
    public func samplesPerFrame(_ frameMS: Int = 20) -> Int { max(1, sampleRate * frameMS / 1000) }

    /// Calls `body` with each frame in turn until it returns false. The last frame may be short unless `wholeOnly`
    /// (the end-of-speech detector counts time in whole frames). True when every frame was taken.
    @discardableResult
    public func forEachFrame(ms frameMS: Int = 20, wholeOnly: Bool = false,
                             _ body: (UnsafeBufferPointer<Int16>) throws -> Bool) rethrows -> Bool {
        let size = samplesPerFrame(frameMS)
        return try samples.withUnsafeBufferPointer { all in
            var start = 0
            while start < all.count {
                let end = min(start + size, all.count)
                if wholeOnly && end - start < size { break }
                guard try body(UnsafeBufferPointer(rebasing: all[start..<end])) else { return false }
                start = end
            }
            return true
        }
    }

    /// Hands the frames to `write` as a microphone would, in real time (each frame at the moment it would have been
    /// heard, on `clock`) or as fast as taken; stops early when `write` refuses a frame or the task is cancelled.
    /// True when every frame was taken.
    public func feed<C: Clock>(ms frameMS: Int = 20, realTime: Bool, clock: C = ContinuousClock(),
                               _ write: (UnsafeBufferPointer<Int16>) -> Bool) async -> Bool where C.Duration == Duration {
        let start = clock.now
        let size = samplesPerFrame(frameMS)
        var index = 0
        while index < samples.count {
            if Task.isCancelled { return false }
            let end = min(index + size, samples.count)
            guard samples[index..<end].withUnsafeBufferPointer({ write($0) }) else { return false }
            index = end
            if realTime {
                try? await clock.sleep(until: start.advanced(by: .microseconds(index * 1_000_000 / sampleRate)), tolerance: nil)
            }
        }
        return true
    }
}
