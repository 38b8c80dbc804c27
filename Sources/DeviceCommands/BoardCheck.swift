import DeviceAssembly
import Board
import BoardCore
import CommandSupport
import SpeakerConfig

/// Tries the board: prints each button event and steps the LEDs through every state on each press, so a person
/// wiring a Pi can check the button and see every LED pattern.
public struct BoardTrial: Sendable {
    public var configPath: String?

    public init(configPath: String? = nil) {
        self.configPath = configPath
    }

    public func run() async throws {
        let context = try AppContext(configPath: configPath)
        let runner: BoardRunner
        do throws(AssemblyError) { runner = try DeviceAssembly.board(context.config.board, ledsOnStandardOutput: true) } catch {
            throw CommandFailure(error)
        }
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
