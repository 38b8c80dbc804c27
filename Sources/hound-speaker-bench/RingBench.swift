import BoardCore
import Foundation

/// What an APA102 ring costs the board's thread (issue #65): for each state, a minute of the animation as the board
/// draws it (a frame at each `nextChange`, its colours and its bytes), counted in frames and thread CPU.
///
///   hound-speaker-bench ring [pixels] [seconds]
enum RingBench {
    static func run(_ arguments: [String]) {
        let pixels = Int(arguments.first ?? "") ?? 12
        let seconds = Double(arguments.dropFirst().first ?? "") ?? 60
        let horizon = Duration.milliseconds(Int64(seconds * 1000))
        print("| state (\(pixels) pixels) | frames in \(Int(seconds)) s | CPU per frame | share of one core |")
        print("|---|---:|---:|---:|")
        var sink = 0
        for state in LEDState.allCases {
            let timer = RingTimer(length: .seconds(600), left: .seconds(300))
            let look = RingAnimation(state: state, pixelCount: pixels, timer: timer)
            var elapsed = Duration.zero
            var frames = 0
            let t0 = EchoBench.threadCPU()
            while true {
                sink &+= Int(APA102.frame(look.colors(at: elapsed), brightness: 10).last ?? 0)
                frames += 1
                guard let next = look.nextChange(after: elapsed), next <= horizon else { break }
                elapsed = next
            }
            let cpu = EchoBench.threadCPU() - t0
            print(String(format: "| %@ | %d | %.1f us | %.4f %% |", state.rawValue, frames, cpu / Double(frames) * 1e6, 100 * cpu / seconds))
        }
        if sink == -1 { print(sink) }  // keeps the frames from being optimised away
    }
}
