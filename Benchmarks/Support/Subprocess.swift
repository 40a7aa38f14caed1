import Foundation
import Glibc

/// A child process (the C baseline) with pipes on its stdin and stdout.
///
/// Spawned with `posix_spawn` rather than Foundation's `Process`, whose pipe ends leak into
/// other children: the C server must see end-of-file on its stdin when we close our end, or it
/// would outlive the benchmark.
public final class Subprocess {
    /// Why a child could not be used.
    public enum Failure: Error, CustomStringConvertible {
        case spawn(String, Int32)
        case noOutput(String)

        public var description: String {
            switch self {
            case .spawn(let program, let code): return "could not start \(program): \(String(cString: strerror(code)))"
            case .noOutput(let what): return "\(what) printed nothing in time (see its messages above)"
            }
        }
    }

    /// The child's process id.
    public let pid: pid_t
    private var stdinWrite: Int32
    private let stdoutRead: Int32
    private var buffered: [UInt8] = []
    private var reaped = false

    /// Starts `arguments[0]`; its stderr is ours, so its complaints reach the terminal.
    public init(_ arguments: [String]) throws {
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        guard pipe(&input) == 0, pipe(&output) == 0 else { throw Failure.spawn(arguments[0], errno) }
        // Close-on-exec, so a later child does not hold this one's stdin open. Only this
        // (single) benchmark thread spawns, so nothing can fork between pipe and fcntl.
        for descriptor in input + output { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        close(input[0])
        close(output[1])
        guard status == 0 else {
            close(input[1])
            close(output[0])
            throw Failure.spawn(arguments[0], status)
        }
        self.pid = pid
        stdinWrite = input[1]
        stdoutRead = output[0]
    }

    /// One line of the child's stdout, or nil after `timeout` seconds or at end of file.
    public func readLine(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            var descriptor = pollfd(fd: stdoutRead, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(remaining * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(stdoutRead, &chunk, chunk.count)
            guard count > 0 else { return nil }
            buffered.append(contentsOf: chunk[0..<count])
        }
    }

    /// Writes `line` and a newline to the child's stdin.
    public func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        var written = 0
        while written < bytes.count, stdinWrite >= 0 {
            let count = bytes[written...].withUnsafeBytes { write(stdinWrite, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            written += count
        }
    }

    /// Closes the child's stdin (the C server exits on that) and waits for it.
    public func finish() {
        guard !reaped else { return }
        reaped = true
        close(stdinWrite)
        stdinWrite = -1
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        close(stdoutRead)
    }

    deinit { finish() }

    /// Runs a program to completion and returns its last line of output.
    public static func run(_ arguments: [String], timeout: Double) throws -> String {
        let child = try Subprocess(arguments)
        defer { child.finish() }
        var last: String?
        while let line = child.readLine(timeout: timeout) { last = line }
        guard let last else { throw Failure.noOutput(arguments.prefix(2).joined(separator: " ")) }
        return last
    }
}

/// Parses `key=value key=value` lines, as dbus_ping prints them.
public func keyValues(_ line: String) -> [String: Double] {
    var result: [String: Double] = [:]
    for field in line.split(separator: " ") {
        let parts = field.split(separator: "=", maxSplits: 1)
        if parts.count == 2, let value = Double(parts[1]) { result[String(parts[0])] = value }
    }
    return result
}
