import BleTestSupport
import Foundation
import Glibc

/// A child process (bluetoothctl, blekit) with pipes on its stdin and its stdout+stderr.
///
/// Output is collected as it arrives; `waitFor` blocks on `poll` with a deadline on a thread of
/// its own (never on the BleLoop, which the simulator and every test share), so a test paces
/// its input on what the child printed, not on sleeps.
final class Subprocess: @unchecked Sendable {
    let pid: pid_t
    private var input: Int32
    private let output: Int32
    private let lock = NSLock()
    private var collected = Data()
    private var reachedEnd = false
    private var reaped = false
    private var status: Int32?

    init(_ arguments: [String], environment: [String: String]) throws {
        // Socket pairs stand in for pipes because they can be made close-on-exec atomically:
        // no child spawned meanwhile by another test inherits them. [0] is the child's end.
        var inputPipe: [Int32] = [-1, -1]
        var outputPipe: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &inputPipe) == 0 else { throw POSIXError(.EMFILE) }
        guard socketpair(AF_UNIX, type, 0, &outputPipe) == 0 else {
            close(inputPipe[0])
            close(inputPipe[1])
            throw POSIXError(.EMFILE)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[0], 1)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[0], 2)

        // The spawning thread may have signals blocked (a libdispatch worker): reset the mask.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        close(inputPipe[0])
        close(outputPipe[0])
        guard status == 0 else {
            close(inputPipe[1])
            close(outputPipe[1])
            throw POSIXError(POSIXErrorCode(rawValue: status) ?? .ENOENT)
        }
        self.pid = pid
        input = inputPipe[1]
        output = outputPipe[1]
    }

    /// Writes `line` and a newline to the child's stdin.
    func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        lock.lock()
        let descriptor = input
        lock.unlock()
        guard descriptor >= 0 else { return }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count) }
            if written <= 0 { if errno == EINTR { continue } else { return } }
            offset += written
        }
    }

    /// Everything printed so far, without ANSI escapes, readline's prompt markers or CRs.
    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return Subprocess.clean(collected)
    }

    /// Waits until the output from character `offset` on contains `needle`; returns the offset
    /// just past it, or nil at the deadline or when the child closed its output first.
    func waitFor(_ needle: String, from offset: Int = 0, timeout: Double = 10) async -> Int? {
        await Task.detached { self.blockingWait(needle, from: offset, timeout: timeout) }.value
    }

    /// Waits until the child closes its output (it exited), up to `timeout`.
    func waitForEnd(timeout: Double = 10) async -> Bool {
        await Task.detached { self.blockingWait(nil, from: 0, timeout: timeout) != nil }.value
    }

    private func find(_ needle: String, from offset: Int) -> Int? {
        let current = text
        let start = current.index(current.startIndex, offsetBy: min(offset, current.count))
        guard let range = current.range(of: needle, range: start..<current.endIndex) else { return nil }
        return current.distance(from: current.startIndex, to: range.upperBound)
    }

    /// With `needle` nil, waits for the end of output and returns 0 then.
    private func blockingWait(_ needle: String?, from offset: Int, timeout: Double) -> Int? {
        let deadline = Date().addingTimeInterval(TestTime.scaled(timeout))
        while true {
            if let needle, let found = find(needle, from: offset) { return found }
            lock.lock()
            let ended = reachedEnd
            lock.unlock()
            if ended { return needle == nil ? 0 : nil }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(max(1, remaining * 1000)))
            if ready < 0 && errno != EINTR { return nil }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(output, &chunk, chunk.count)
            lock.lock()
            if count > 0 { collected.append(contentsOf: chunk[0..<count]) } else if count == 0 || errno != EINTR { reachedEnd = true }
            lock.unlock()
        }
    }

    /// Closes stdin, waits (deadline-bound) for the child to finish, kills it if it does not,
    /// and reaps it.
    /// Returns the exit status (nil when it was killed by a signal).
    @discardableResult
    func finish(timeout: Double = 5) async -> Int32? {
        lock.withLock {
            if input >= 0 {
                close(input)
                input = -1
            }
        }
        if !(await waitForEnd(timeout: timeout)) { kill(pid, SIGKILL) }
        reap()
        return lock.withLock { status }
    }

    /// Sends a signal to the child.
    func signal(_ number: Int32) { kill(pid, number) }

    private func reap() {
        lock.lock()
        defer { lock.unlock() }
        guard !reaped else { return }
        reaped = true
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS, which Glibc does not import as functions.
        status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : nil
        close(output)
    }

    deinit {
        if input >= 0 { close(input) }
        if !reaped {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            close(output)
        }
    }

    static func clean(_ data: Data) -> String {
        var result = ""
        var scalars = String(decoding: data, as: UTF8.self).unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            switch scalar {
            case "\u{1B}":
                // CSI: ESC [ parameters final-letter.
                guard let next = scalars.next(), next == "[" else { continue }
                while let part = scalars.next() {
                    if (part.value >= 0x40 && part.value <= 0x7E) { break }
                }
            case "\u{01}", "\u{02}", "\r":
                continue
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// The path of a program built next to this test bundle (`blekit`).
    static func builtProduct(_ name: String) -> String? {
        let me = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        let candidate = me.deletingLastPathComponent().appendingPathComponent(name).path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
    }
}
