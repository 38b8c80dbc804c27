import ArgumentParser
import BoardCore
import SpeakerApp
import Board
import SpeakerConfig

/// Tries the board: prints each button event and steps the LEDs through every state on each press, so a person
/// wiring a Pi can check the button and see every LED pattern.
struct BoardCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "board",
        abstract: "Try the button and LEDs: each press shows the next LED state; Ctrl-C to stop.",
        discussion: "With the simulated board: Space or Enter clicks, h holds and releases, l long-presses (on a terminal); or lines press/release/click/long on stdin.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        try await reporting {
            let context = try AppContext(configPath: options.config)
            let runner = try SpeakerAssembly.board(context.config.board, ledsOnStandardOutput: true)
            let states = LEDState.allCases.filter { $0 != .off }
            var index = 0
            runner.start()
            runner.show(states[index])
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await Signals.waitForTermination()
                    runner.stop()
                }
                for await event in runner.events {
                    printLine("\(event)")
                    if event == .inputEnded { runner.stop() }
                    if event == .button(.pressed) {
                        index = (index + 1) % states.count
                        runner.show(states[index])
                    }
                }
                group.cancelAll()
            }
        }
    }
}
