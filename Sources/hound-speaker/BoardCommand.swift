import ArgumentParser
import BoardCore
import SpeakerApp
import Board
import FoundationEssentials
import Glibc
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
            let board = context.config.board
            let hardware: BoardHardware
            let roles: [LEDRole]
            let terminal = isatty(STDIN_FILENO) == 1
            if board.driver == "simulated" {
                let draw = SimulatedLEDs.drawer(terminal: isatty(STDOUT_FILENO) == 1) { writeAll(STDOUT_FILENO, $0) }
                hardware = .simulated(input: STDIN_FILENO, terminal: terminal, draw: draw)
                roles = board.led.isEmpty ? [.listening, .searching, .speaking].filter { board.leds[$0.rawValue] != nil } : [.status]
            } else {
                let (button, leds) = BoardSetup.specs(board)
                do throws(BoardError) { hardware = .gpio(try GPIODBoard(button: button, leds: leds)) } catch {
                    throw CommandFailure(message: error.message)
                }
                roles = Array(leds.keys)
            }
            let runner: BoardRunner
            do throws(BoardError) {
                runner = try BoardRunner(hardware: hardware, gestures: BoardSetup.gestures(board),
                                         talkMode: TalkMode(rawValue: board.talkMode) ?? .tap, roles: roles.isEmpty ? [.status] : roles)
            } catch { throw CommandFailure(message: error.message) }
            let states = LEDState.allCases.filter { $0 != .off }
            var index = 0
            runner.start()
            runner.show(states[index])
            let stopper = Task { await Signals.waitForTermination(); runner.stop() }
            for await event in runner.events {
                printLine("\(event)")
                if event == .inputEnded { runner.stop() }
                if event == .button(.pressed) {
                    index = (index + 1) % states.count
                    runner.show(states[index])
                }
            }
            stopper.cancel()
        }
    }
}
