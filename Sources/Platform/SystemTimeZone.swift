// The system's time zone by name, without ICU: FoundationEssentials alone knows only GMT (TimeZone.current is
// "GMT" there), and the speaker must tell Houndify its real zone ("what time is it" is answered in it).
import Glibc

public enum SystemTimeZone {
    public static let zoneinfo = "/usr/share/zoneinfo/"

    /// The zone the C library uses, the way timedatectl reads it: $TZ when it names a zone, else the target of
    /// the /etc/localtime link (".../zoneinfo/Europe/Paris"), else /etc/timezone (Debian), else "UTC".
    public static func identifier(environment: String? = nil, localtime: String = "/etc/localtime",
                                  timezoneFile: String = "/etc/timezone") -> String {
        if var name = environment ?? getenv("TZ").map({ String(cString: $0) }), !name.isEmpty {
            if name.hasPrefix(":") { name.removeFirst() }
            if let range = name.firstRange(of: "zoneinfo/") { name = String(name[range.upperBound...]) }
            if isKnown(name) { return name }
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink(localtime, &buffer, buffer.count - 1)
        if length > 0 {
            let target = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let range = target.firstRange(of: "zoneinfo/") {
                let name = String(target[range.upperBound...])
                if isKnown(name) { return name }
            }
        }
        if let file = fopen(timezoneFile, "re") {  // "e": close-on-exec, as every descriptor the app opens
            defer { fclose(file) }
            var line = [CChar](repeating: 0, count: 256)
            if fgets(&line, Int32(line.count), file) != nil {
                let name = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).trimmed()
                if isKnown(name) { return name }
            }
        }
        return "UTC"
    }

    /// True when `name` is a zone of the tz database installed here (a TZif file under /usr/share/zoneinfo, the
    /// files the C library itself reads), so a misspelt `[location] timezone` is caught at start-up.
    public static func isKnown(_ name: String, zoneinfo: String = zoneinfo) -> Bool {
        guard !name.isEmpty, !name.hasPrefix("/"), !name.split(separator: "/").contains(".."),
              let file = fopen(zoneinfo + name, "re") else { return false }
        defer { fclose(file) }
        var magic = [UInt8](repeating: 0, count: 4)
        return fread(&magic, 1, 4, file) == 4 && magic == Array("TZif".utf8)
    }
}
