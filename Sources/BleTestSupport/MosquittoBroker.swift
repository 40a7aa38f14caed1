import BleDBus
import Foundation
import Glibc

/// A real Mosquitto broker for one test: loopback only, a free port, its own configuration in
/// a temporary directory, killed by `stop()` (and on deinit). Needs Debian's `mosquitto`
/// (installed by `scripts/bootstrap`).
public final class MosquittoBroker: @unchecked Sendable {
    /// Why the broker did not come up.
    public enum StartError: Error, CustomStringConvertible {
        /// No mosquitto binary.
        case notInstalled
        /// It started but never said it was running.
        case notReady(String)

        /// What to do.
        public var description: String {
            switch self {
            case .notInstalled: return "mosquitto is not installed: run scripts/bootstrap (Debian package mosquitto)"
            case .notReady(let detail): return "mosquitto did not start: \(detail)"
            }
        }
    }

    /// The port it listens on (127.0.0.1).
    public let port: Int32
    /// Its working directory (configuration, log).
    public let directory: URL
    private var process: ChildProcess?

    /// The binary tests use.
    public static let executable = "/usr/sbin/mosquitto"

    /// Starts a broker on `port`, or on a free port when nil (a restart reuses the old port).
    public init(port: Int32? = nil, timeout: TimeInterval = 10) throws {
        guard FileManager.default.isExecutableFile(atPath: MosquittoBroker.executable) else { throw StartError.notInstalled }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-mosquitto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.port = try port ?? MosquittoBroker.freePort()
        try start(timeout: timeout)
    }

    private func start(timeout: TimeInterval) throws {
        let configuration = """
        listener \(port) 127.0.0.1
        allow_anonymous true
        persistence false
        connection_messages false
        log_dest stderr
        log_type error
        log_type warning
        log_type notice
        log_type information
        max_queued_messages 100000
        sys_interval 1

        """
        let path = directory.appendingPathComponent("mosquitto.conf").path
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
        // Its log goes to stderr, which is unbuffered (stdout into a pipe is not), joined to the
        // pipe we read. A shell holds it on a leash: when our end of its stdin closes (stop(),
        // or this process dying, even by SIGKILL) the shell kills the broker, so no broker
        // outlives its test.
        let script = "\"$0\" -c \"$1\" 2>&1 & broker=$!; read _; kill -9 $broker; wait $broker"
        let child = try ChildProcess(arguments: ["/bin/sh", "-c", script, MosquittoBroker.executable, path],
                                     standardErrorPath: directory.appendingPathComponent("stderr.log").path)
        // "mosquitto version 2.0.11 running" is logged once the listener is open.
        var seen: [String] = []
        let deadline = Date().addingTimeInterval(TestTime.scaled(timeout))
        while Date() < deadline {
            guard let line = child.readLine(before: deadline) else { break }
            seen.append(line)
            if line.contains(" running") {
                process = child
                return
            }
        }
        child.terminate()
        throw StartError.notReady(seen.joined(separator: " | "))
    }

    /// Kills the broker (SIGKILL: clients see their connections die, as on a broker crash)
    /// and waits for it to be gone.
    public func stop() {
        process?.terminate()
        process = nil
    }

    /// Starts it again on the same port. Another program may have been given that port in the
    /// meantime (the kernel hands it out as an ephemeral port once it is free), so a busy port is
    /// tried again until `timeout`.
    public func restart(timeout: TimeInterval = 10) throws {
        stop()
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            do {
                return try start(timeout: max(deadline.timeIntervalSinceNow, 1))
            } catch StartError.notReady(let log) where log.contains("Address already in use") && Date() < deadline {
                usleep(100_000)
            }
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts a broker on a thread of its own: waiting for it to listen never blocks the
    /// caller's thread (BleKit's loop, when the caller is `@BleLoop` test code, which every
    /// BleSim of the process needs).
    public static func start(port: Int32? = nil, timeout: TimeInterval = 10) async throws -> MosquittoBroker {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do { continuation.resume(returning: try MosquittoBroker(port: port, timeout: timeout)) } catch { continuation.resume(throwing: error) }
            }
        }
    }

    /// `restart(timeout:)` on a thread of its own, for the same reason.
    public func restartInBackground(timeout: TimeInterval = 10) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            Thread.detachNewThread { [self] in
                do { try restart(timeout: timeout); continuation.resume() } catch { continuation.resume(throwing: error) }
            }
        }
    }

    /// A port nobody listens on now, chosen by the kernel.
    public static func freePort() throws -> Int32 {
        let bound = try boundLoopbackSocket()
        bound.socket.close()
        return bound.port
    }

    /// A TCP socket bound to 127.0.0.1 on a port the kernel chose, and that port; the socket
    /// closes when its owner is released.
    public static func boundLoopbackSocket() throws -> (socket: UnixFileDescriptor, port: Int32) {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        let owned = UnixFileDescriptor(adopting: descriptor)
        let socket = owned.rawValue
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return (owned, Int32(UInt16(bigEndian: address.sin_port)))
    }
}
