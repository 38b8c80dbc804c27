public import AudioCore
public import Platform

extension HotPhraseModel {
    /// The doctor's hot-phrase check: the model loads as `run` loads it at start-up, and the threshold the
    /// sensitivity gives.
    public static func diagnostics(_ settings: HotPhraseSettings) -> [Diagnostic] {
        guard settings.enabled else { return [Diagnostic(.info, "hot phrase off ([hotphrase] enabled = false): the button only")] }
        do {
            let model = try HotPhraseModel.locate(settings.model)
            let threshold = HotPhraseDetector.threshold(sensitivity: settings.sensitivity, model: model)
            return [.check(true, "hot-phrase model \(model.path) loads (\"\(model.phrase)\", \(model.fileBytes) bytes; "
                               + String(cFormat: "sensitivity %.2f -> threshold %.6f)", settings.sensitivity, threshold))]
        } catch {
            return [.check(false, "\(error)", advice: "install share/hotphrase/ok-hound.hpm to /usr/share/hound-speaker/hotphrase (deploy/install.sh does), set [hotphrase] model, or [hotphrase] enabled = false")]
        }
    }
}
