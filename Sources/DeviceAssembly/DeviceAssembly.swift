public import Audio
public import Board
import BoardCore
import Glibc
import Platform
public import SpeakerConfig
public import Speech

/// The speaker's devices made from its settings: the output volume, the speech engine, the board. `say`, `board`
/// and `hotphrase` need only these, not the whole speaker (Assembly) with Houndify and the control server.
public enum DeviceAssembly {
    /// The output volume of `[audio]`, for the speaker and for `say`. Speech going to `output` a file (or memory)
    /// never opens `[audio] mixer_control`: a WAV has no mixer, and the card need not be there.
    public static func outputVolume(_ config: SpeakerConfiguration, for output: SpeechOutput) throws(AssemblyError) -> OutputVolume {
        let mixerControl: String
        if case .device = output { mixerControl = config.audio.mixerControl } else { mixerControl = "" }
        do throws(AudioDeviceError) {
            return try OutputVolume(percent: config.audio.volume, device: config.audio.output, mixerControl: mixerControl)
        } catch {
            // A control the card lacks is the config's (systemd does not restart); a card not there yet is not, and
            // the unit's restarts find it once it is plugged in.
            if error.isConfiguration { throw AssemblyError(.configuration, "\(config.path ?? "config"): [audio] mixer_control: \(error)") }
            throw AssemblyError(.unavailable, error.description)
        }
    }

    /// espeak-ng as `[speech]` sets it, at `volume`, for the speaker and for `say`.
    public static func speechEngine(_ config: SpeakerConfiguration, volume: OutputVolume, echo: EchoCanceller? = nil) throws(AssemblyError) -> SpeechEngine {
        do throws(SpeechError) {
            return try SpeechEngine(settings: config.speech, volume: volume, echo: echo)
        } catch {
            // A voice espeak-ng lacks is the config's mistake, which no restart mends.
            if error.isConfiguration { throw AssemblyError(.configuration, "\(config.path ?? "config"): [speech] voice: \(error.message)") }
            throw AssemblyError(.unavailable, error.message)
        }
    }


    /// The board from config: the GPIO lines (libgpiod) or the simulated board on this terminal, its LEDs drawn on
    /// stderr (or stdout, for `board`, whose output is the LEDs).
    /// `onHardware` hears of a GPIO chip that goes away while the board runs, and of its return.
    public static func board(_ board: SpeakerConfiguration.BoardSection, ledsOnStandardOutput: Bool = false,
                             onHardware: @escaping @Sendable (BoardHardwareEvent) -> Void = { _ in }) throws(AssemblyError) -> BoardRunner {
        let hardware: BoardHardware
        let roles: [LEDRole]
        switch board.driver {
        case .simulated:
            let out = ledsOnStandardOutput ? STDOUT_FILENO : STDERR_FILENO
            let draw = SimulatedLEDs.drawer(terminal: isatty(out) == 1) { writeAll(out, $0) }
            hardware = .simulated(input: STDIN_FILENO, terminal: isatty(STDIN_FILENO) == 1, draw: draw)
            roles = board.led.isEmpty ? [LEDRole.listening, .searching, .speaking].filter { board.leds[$0] != nil } : [.status]
        case .gpiod:
            let (button, leds) = BoardSetup.specs(board)
            do throws(BoardError) { hardware = .gpio(try GPIODBoard(button: button, leds: leds, muteSwitch: BoardSetup.muteSwitch(board),
                                                                           debounce: board.gestures.debounce)) } catch {
                // Lines or a chip this machine lacks (or may not use) are the config's; a line another program holds
                // is not, and the unit tries again.
                throw AssemblyError(error.isConfiguration ? .configuration : .unavailable, error.message)
            }
            roles = leds.keys.filter { $0 != .ringPower }
        }
        let ring = try ring(board)
        do throws(BoardError) {
            return try BoardRunner(hardware: hardware, gestures: board.gestures, talkMode: board.talkMode,
                                   roles: roles.isEmpty ? [.status] : roles, ring: ring, onHardware: onHardware)
        } catch { throw AssemblyError(.unavailable, error.message) }
    }

    /// The board's APA102 ring on its spidev device, nil without one. The device is opened at the first frame: SPI
    /// not enabled is logged by the board (and said by `doctor`), and the speaker goes on without the ring. Its power
    /// line is a GPIO line, requested with the others (BoardSetup.specs).
    static func ring(_ board: SpeakerConfiguration.BoardSection) throws(AssemblyError) -> APA102Ring? {
        guard board.hasRing else { return nil }
        if board.ring.powerLine != nil, board.driver != .gpiod {
            throw AssemblyError(.configuration, "[board] ring_power needs driver = \"gpiod\": the simulated board has no GPIO lines")
        }
        var profile = board.ring
        if !board.profile.isEmpty { profile.name = "LED ring of \(board.profile)" }
        do throws(BoardError) { return try APA102Ring(profile: profile) } catch {
            throw AssemblyError(error.isConfiguration ? .configuration : .unavailable, error.message)
        }
    }
}
