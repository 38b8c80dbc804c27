public import HotPhrase
public import SpeakerCore

extension TakeRefusal {
    /// The take checks' verdict (docs/household.md) as the enrollment session takes it: the kind for what the
    /// speaker says, the checks' own words as the detail.
    public init(_ problem: TakeProblem) {
        let kind: Kind = switch problem {
        case .clipped: .clipped
        case .tooQuiet: .tooQuiet
        case .noSpeech: .noSpeech
        case .speechTooLong, .recordingTooLong: .tooLong
        case .unlikeTheOthers: .unlike
        }
        self.init(kind, detail: problem.description)
    }
}
