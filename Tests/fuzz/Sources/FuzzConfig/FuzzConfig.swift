// libFuzzer target: a config file's bytes through the loader (Sources/SpeakerConfig/ConfigLoader.swift): UTF-8,
// TOML (TOMLKit), then every key's type and range.
//
// Besides "no crash", it checks what an owner reads: a refused file's error names the file, a line inside it (or
// none) and a problem.
import SpeakerConfig

func fuzzConfig(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    let lineCount = bytes.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    do throws(ConfigError) {
        let config = try ConfigLoader.parse(contents: bytes, file: "fuzz.toml")
        _ = config.houndify.clientKey
    } catch {
        // A profile's own file may be named instead (a [board] profile = "..." from ./board).
        if error.file == "fuzz.toml", let line = error.line, !(1...lineCount).contains(line) {
            fatalError("the error names line \(line) of a \(lineCount)-line file: \(error)")
        }
        if error.problem.isEmpty { fatalError("an error with no problem named: \(error)") }
        _ = error.description
    }
    return 0
}
