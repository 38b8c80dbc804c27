import Audio
import AudioCore
import FoundationEssentials
import Glibc
import Platform
public import Houndify
public import Speaker

/// Listens for the hot phrase on every 16 kHz frame (the detector of issue #5 plugs in here).
public protocol HotPhraseDetecting: AnyObject, Sendable {
    /// True when this frame completes the hot phrase.
    func process(_ frame: UnsafeBufferPointer<Int16>) -> Bool
    func reset()
}

/// Sits on the capture thread: every frame goes to the hot phrase detector (when one is given and the speaker
/// is not making sounds of its own), into a short pre-roll ring, and, while a query is recorded, to the voice
/// search and the endpointer. Decisions go to the loop through `post`. Nothing is allocated per frame.
final class CaptureRouter: @unchecked Sendable {
    private let lock = Lock()
    private var search: VoiceSearch?
    private var endpointer: Endpointer?
    private var searchID = 0
    private var preRoll: [Int16]
    private var preRollStart = 0
    private var preRollCount = 0
    private var listenForHotPhrase = true
    private let detector: (any HotPhraseDetecting)?
    private let post: @Sendable (LoopInput) -> Void
    private(set) var framesSeen = 0

    init(preRollMS: Int, detector: (any HotPhraseDetecting)?, post: @escaping @Sendable (LoopInput) -> Void) {
        preRoll = [Int16](repeating: 0, count: max(1, preRollMS * 16))
        self.detector = detector
        self.post = post
    }

    /// Routes frames to `search` from now on; with `preRoll` the ring's last audio goes first (the moments
    /// before a hot phrase fired).
    func attach(_ search: VoiceSearch, id: Int, endpointer: Endpointer, preRoll withPreRoll: Bool) {
        lock.lock()
        defer { lock.unlock() }
        self.search = search
        self.endpointer = endpointer
        searchID = id
        if withPreRoll && preRollCount > 0 {
            let first = preRollStart
            let tail = min(preRollCount, preRoll.count - first)
            preRoll.withUnsafeBufferPointer { ring in
                _ = search.write(UnsafeBufferPointer(rebasing: ring[first..<first + tail]))
                if tail < preRollCount { _ = search.write(UnsafeBufferPointer(rebasing: ring[0..<(preRollCount - tail)])) }
            }
        }
    }

    func detach() {
        lock.lock()
        search = nil
        endpointer = nil
        lock.unlock()
    }

    /// The speaker's own sound is playing (or not): the hot phrase is not listened for meanwhile.
    func setHotPhraseListening(_ on: Bool) {
        lock.lock()
        if on && !listenForHotPhrase { detector?.reset() }
        listenForHotPhrase = on
        lock.unlock()
    }

    /// Called by the capture thread for every frame.
    func frame(_ samples: UnsafeBufferPointer<Int16>, level: Double) {
        lock.lock()
        framesSeen += 1
        // The ring keeps the last preRoll.count samples.
        for sample in samples {
            let index = (preRollStart + preRollCount) % preRoll.count
            preRoll[index] = sample
            if preRollCount < preRoll.count { preRollCount += 1 } else { preRollStart = (preRollStart + 1) % preRoll.count }
        }
        var decision: Endpointer.Decision? = nil
        let id = searchID
        if let search {
            if !search.write(samples) {
                self.search = nil  // the upload has ended (SafeToStopAudio, the answer): stop feeding it
            }
            decision = endpointer?.process(samples)
            if let d = decision, d != .speechStarted { self.search = nil; endpointer = nil }
        }
        let hot = search == nil && listenForHotPhrase && detector?.process(samples) == true
        lock.unlock()
        if let decision { post(.endpoint(id: id, decision)) }
        if hot { post(.event(.hotPhrase)) }
    }
}

/// What reaches the loop.
enum LoopInput: Sendable {
    case event(SpeakerEvent)
    /// From the endpointer of search `id`.
    case endpoint(id: Int, Endpointer.Decision)
    /// From voice search `id`.
    case search(id: Int, VoiceSearchEvent)
}

/// How a failed search is told to the person.
public enum FailureMapping {
    public static func failure(for error: HoundifyError) -> SearchFailure? {
        switch error {
        case .cancelled: nil
        case .connectionFailure: .offline
        // A connect timeout is the network; "no answer" after sending is the service.
        case .connectionTimeout(let detail): detail.hasPrefix("no answer") ? .serviceFailing : .offline
        case .authenticationFailed: .authentication
        case .serverStatusError, .noResponseReceived, .invalidResponse, .parseFailed, .httpError, .internalError: .serviceFailing
        }
    }
}
