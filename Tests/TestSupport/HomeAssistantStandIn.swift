import Foundation
import Glibc
public import JSONKit

/// Tests/support/ha_standin.py on a port of its own: Home Assistant's conversation API as the client meets it.
public final class HomeAssistantStandIn: @unchecked Sendable {
    // @unchecked: set once in init, ended once in deinit.
    public let port: Int
    public let directory: String
    private let pid: pid_t

    public struct Failure: Error, CustomStringConvertible { public var description: String }

    public init(token: String, _ options: [String] = []) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hs-ha-standin-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = "\(repositoryRoot)/Tests/support/ha_standin.py"
        let child = try Child.spawn("/usr/bin/python3", [script, "--token", token, "--record", "\(directory)/requests.jsonl"] + options,
                                    output: .both)
        pid = child.pid
        // Its first line is the port; anything else (a traceback) is why it did not start.
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(child.output!, &byte, 1) == 1, byte != 0x0A { line.append(byte) }
        close(child.output!)
        let text = String(decoding: line, as: UTF8.self)
        guard let port = Int(text) else {
            Child.end(pid)
            throw Failure(description: "ha_standin.py did not start: \(text)")
        }
        self.port = port
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    /// Every request so far: path, authorization, content_type, body.
    public var requests: [JSONValue] {
        let text = (try? String(contentsOfFile: "\(directory)/requests.jsonl", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONValue(parsing: Data($0.utf8)) }
    }

    /// The JSON body of request `index`.
    public func body(_ index: Int) -> JSONValue? {
        let all = requests
        guard all.indices.contains(index) else { return nil }
        return all[index]["body"]?.stringValue.flatMap { try? JSONValue(parsing: Data($0.utf8)) }
    }

    deinit {
        Child.end(pid)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

