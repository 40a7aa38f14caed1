import Foundation
import Glibc

// @unchecked: the output side (`buffered` and the stdout pipe) is behind `reading`; the rest is
// set once at spawn or touched by the one thread that stops the child.
/// A child process with a pipe on its stdin and stdout, spawned with `posix_spawn`.
///
/// Foundation's `Process` leaks pipe ends into grandchildren and spins while waiting; tests
/// need a child that ends when our end of its stdin closes and a wait that costs nothing.
public final class ChildProcess: @unchecked Sendable {
    private static let spawnLock = NSLock()
    /// Readers take turns: tests read lines from whichever thread of the global pool the last
    /// wait ran on, and without a lock nothing orders one reader's buffer with the next's
    /// (ThreadSanitizer reported the CLI tests' successive `readLine`s as a race).
    private let reading = NSLock()
    /// The child's process ID.
    public let pid: pid_t
    private var stdinWrite: Int32
    private let stdoutRead: Int32
    private var buffered = Data()
    private var exited = false

    /// Spawns `arguments[0]` (an absolute path) with `environment` (ours by default); its
    /// standard error goes to `standardErrorPath` (appended), or to ours when that is nil.
    public init(arguments: [String], environment: [String: String]? = nil, standardErrorPath: String? = "/dev/null") throws {
        var inputPipe: [Int32] = [0, 0]
        var outputPipe: [Int32] = [0, 0]
        // Our spawns are serialised so no other child of ours inherits these ends before
        // close-on-exec is set.
        ChildProcess.spawnLock.lock()
        defer { ChildProcess.spawnLock.unlock() }
        guard pipe(&inputPipe) == 0, pipe(&outputPipe) == 0 else { throw POSIXError(.EMFILE) }
        for descriptor in inputPipe + outputPipe { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        if let standardErrorPath {
            posix_spawn_file_actions_addopen(&actions, 2, standardErrorPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let environmentList = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let envp: [UnsafeMutablePointer<CChar>?] = environmentList.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }

        // The spawning thread may be a libdispatch worker with signals blocked; the child
        // would inherit that mask and ignore the SIGTERM that is meant to stop it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        var defaultSignals = sigset_t()
        sigemptyset(&defaultSignals)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaultSignals, signal) }
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        close(inputPipe[0])
        close(outputPipe[1])
        guard status == 0 else {
            close(inputPipe[1])
            close(outputPipe[0])
            throw POSIXError(POSIXErrorCode(rawValue: status) ?? .ENOENT)
        }
        self.pid = pid
        self.stdinWrite = inputPipe[1]
        self.stdoutRead = outputPipe[0]
    }

    /// Reads one line of the child's stdout, waiting at most `timeout` seconds at the tests'
    /// clock (``TestTime/scaled(_:)-(TimeInterval)``).
    public func readLine(timeout: TimeInterval) -> String? {
        readLine(before: Date().addingTimeInterval(TestTime.scaled(timeout)))
    }

    /// Reads one line of the child's stdout, waiting until `deadline` at most (a point in time
    /// the caller computed, so it is not scaled again).
    public func readLine(before deadline: Date) -> String? {
        reading.lock()
        defer { reading.unlock() }
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self)
                buffered.removeSubrange(buffered.startIndex...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            var descriptor = pollfd(fd: stdoutRead, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(remaining * 1000))
            guard ready > 0 else { if ready == 0 { return nil } else { continue } }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(stdoutRead, &chunk, chunk.count)
            guard count > 0 else { return nil }
            buffered.append(contentsOf: chunk[0..<count])
        }
    }

    /// Reads the child's stdout until it closes, then reaps the child: its exit status (128 +
    /// the signal for a killed child) and everything it printed. A child still running at the
    /// deadline (`timeout` seconds at the tests' clock, ``TestTime/scaled(_:)-(TimeInterval)``)
    /// is killed, and the status is `nil`.
    public func runToCompletion(timeout: TimeInterval) -> (status: Int32?, output: String) {
        let deadline = Date().addingTimeInterval(TestTime.scaled(timeout))
        reading.lock()
        var output = buffered
        buffered = Data()
        var timedOut = false
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { timedOut = true; break }
            var descriptor = pollfd(fd: stdoutRead, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(remaining * 1000))
            if ready < 0 { if errno == EINTR { continue } else { break } }
            if ready == 0 { timedOut = true; break }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(stdoutRead, &chunk, chunk.count)
            guard count > 0 else { break }
            output.append(contentsOf: chunk[0..<count])
        }
        reading.unlock()
        if timedOut { kill(pid, SIGKILL) }
        let status = reap()
        return (timedOut ? nil : status, String(decoding: output, as: UTF8.self))
    }

    /// Writes `text` and a newline to the child's standard input; false when the child has
    /// closed it (or exited).
    @discardableResult
    public func writeLine(_ text: String) -> Bool {
        guard stdinWrite >= 0 else { return false }
        // A child that exited must not take the test process with it.
        signal(SIGPIPE, SIG_IGN)
        let bytes = Array((text + "\n").utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(stdinWrite, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            written += count
        }
        return true
    }

    /// Sends `signal` to the child, then reaps it.
    @discardableResult
    public func stop(with signal: Int32 = SIGTERM) -> Int32 {
        guard !exited else { return 0 }
        kill(pid, signal)
        return reap()
    }

    private func reap() -> Int32 {
        guard !exited else { return 0 }
        exited = true
        if stdinWrite >= 0 {
            close(stdinWrite)
            stdinWrite = -1
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        close(stdoutRead)
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Glibc does not import as functions.
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Closes the child's stdin and waits for it to exit.
    public func terminate() {
        _ = reap()
    }

    deinit { terminate() }
}
