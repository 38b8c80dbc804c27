import AudioCore
import Testing

@Suite struct FramesTests {
    let audio = MonoAudio(samples: (0..<1000).map { Int16($0) }, sampleRate: 16_000)

    @Test func framesCoverTheRecordingInOrderWithAShortLastOne() {
        var sizes: [Int] = []
        var joined: [Int16] = []
        #expect(audio.forEachFrame { frame in sizes.append(frame.count); joined += frame; return true })
        #expect(sizes == [320, 320, 320, 40])
        #expect(joined == audio.samples)
    }

    @Test func wholeFramesOnlyAndStoppingEarly() {
        var count = 0
        #expect(audio.forEachFrame(wholeOnly: true) { _ in count += 1; return true })
        #expect(count == 3)
        count = 0
        #expect(!audio.forEachFrame(ms: 10) { _ in count += 1; return count < 2 })
        #expect(count == 2)
        #expect(MonoAudio(samples: [], sampleRate: 8000).samplesPerFrame() == 160)
    }

    @Test func feedStopsWhenAFrameIsRefusedAndOnCancellation() async {
        var taken = 0
        let all = await audio.feed(realTime: false) { _ in taken += 1; return taken < 3 }
        #expect(!all && taken == 3)
        taken = 0
        #expect(await audio.feed(realTime: false) { _ in taken += 1; return true } && taken == 4)
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await audio.feed(realTime: false) { _ in true }
        }
        #expect(await cancelled.value == false)
    }
}
