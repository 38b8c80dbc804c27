public import AudioCore
import CEspeakNG
public import Platform

extension SpeechEngine {
    /// The doctor's speech checks: the voice loads in espeak-ng, and every earcon (shipped or configured) reads.
    public static func diagnostics(voice: VoiceSettings, earcons: [Earcon: String]) -> [Diagnostic] {
        var out: [Diagnostic] = []
        do throws(SpeechError) {
            _ = try SpeechEngine(settings: voice)
            out.append(.check(true, "espeak-ng voice \"\(voice.voice)\""))
        } catch {
            out.append(.check(false, error.message, advice: "apt install espeak-ng-data, or choose a voice from `espeak-ng --voices`"))
        }
        do throws(SpeechError) {
            _ = try Earcons.load(overrides: earcons)
            out.append(.check(true, "earcons"))
        } catch {
            out.append(.check(false, error.message))
        }
        return out
    }

    public static var libraryVersion: Diagnostic { Diagnostic(.info, "espeak-ng \(String(cString: espeak_Info(nil)))") }
}
