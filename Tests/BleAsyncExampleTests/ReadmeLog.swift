import Foundation
import Synchronization

/// What the README examples printed, for the tests to check.
final class ReadmeLog: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
    func clear() { lines.withLock { $0.removeAll() } }
}

let readmeLog = ReadmeLog()

/// The examples' `print`, recorded (and still printed).
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    let line = items.map { "\($0)" }.joined(separator: separator)
    readmeLog.append(line)
    Swift.print(line, terminator: terminator)
}
