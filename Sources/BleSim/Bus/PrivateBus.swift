import BleDBus
import Foundation

/// A private `dbus-daemon` with its own configuration and a socket in a temporary directory,
/// so that no test touches the machine's system bus.
///
/// The daemon stops when `stop()` is called, when this object is released, and even when the
/// test process dies: it runs under a small shell guard that kills it once our end of its
/// standard input closes.
public final class PrivateBus: @unchecked Sendable {
    /// Why a private bus could not start.
    public enum StartError: Error, CustomStringConvertible {
        /// `dbus-daemon` is not installed.
        case daemonMissing
        /// The daemon did not print its address in time.
        case noAddress(detail: String)

        /// What to do.
        public var description: String {
            switch self {
            case .daemonMissing:
                return "dbus-daemon is not installed; run scripts/bootstrap (Debian package dbus-daemon)."
            case .noAddress(let detail):
                return "The private dbus-daemon did not start: \(detail)"
            }
        }
    }

    /// The bus address (`unix:path=…`), for `BusAddress.address` or `DBUS_SYSTEM_BUS_ADDRESS`.
    public let address: String
    /// The directory holding the socket and the configuration.
    public let directory: URL
    private let child: ChildProcess
    private let lock = NSLock()
    private var stopped = false

    /// Starts a daemon and waits (up to `timeout` at the tests' clock) until it listens.
    /// `denyingCallsTo` names a bus name whose method calls the daemon's policy refuses with
    /// `org.freedesktop.DBus.Error.AccessDenied`, as the system bus refuses `org.bluez` to a
    /// user outside the `bluetooth` group.
    public init(timeout: TimeInterval = 10, denyingCallsTo deniedName: String? = nil) throws {
        let daemon = ["/usr/bin/dbus-daemon", "/bin/dbus-daemon"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let daemon else { throw StartError.daemonMissing }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus.sock").path
        let config = directory.appendingPathComponent("bus.conf")
        try PrivateBus.configuration(socketPath: socket, denying: deniedName).write(to: config, atomically: true, encoding: .utf8)

        // The guard: when our end of its stdin closes (we stopped, or died), `read` returns and
        // the daemon is killed. Every pipe end is close-on-exec, so only the guard holds them.
        let script = "\"$0\" --nofork --print-address=1 --config-file=\"$1\" </dev/null & pid=$!; read _; kill $pid 2>/dev/null; wait $pid"
        let child = try ChildProcess(arguments: ["/bin/sh", "-c", script, daemon, config.path])
        guard let line = child.readLine(timeout: timeout), line.hasPrefix("unix:") else {
            child.terminate()
            throw StartError.noAddress(detail: "the daemon printed no address within \(TestTime.scaled(timeout)) s")
        }
        self.address = line
        self.directory = directory
        self.child = child
    }

    /// The bus as a `BusAddress`.
    public var busAddress: BusAddress { .address(address) }

    /// Environment for a child process that should see this bus as its system bus.
    public var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        return environment
    }

    /// Stops the daemon and removes its directory; safe to call more than once.
    public func stop() {
        lock.lock()
        let alreadyStopped = stopped
        stopped = true
        lock.unlock()
        guard !alreadyStopped else { return }
        child.terminate()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    /// Starts a bus on a thread of its own, so that waiting for the daemon never blocks the
    /// caller's thread (BleKit's loop thread, when the caller is `@BleLoop` code that other
    /// tests running in parallel depend on).
    public static func start(timeout: TimeInterval = 10, denyingCallsTo deniedName: String? = nil) async throws -> PrivateBus {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    continuation.resume(returning: try PrivateBus(timeout: timeout, denyingCallsTo: deniedName))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Stops the daemon on a thread of its own and returns at once.
    public func stopInBackground() {
        Thread.detachNewThread { [self] in stop() }
    }

    /// Runs `body` with a fresh bus and always stops it afterwards, error or not.
    public static func with<T>(_ body: (PrivateBus) async throws -> T) async throws -> T {
        let bus = try PrivateBus()
        defer { bus.stop() }
        return try await body(bus)
    }

    static func configuration(socketPath: String, denying deniedName: String? = nil) -> String {
        let deny = deniedName.map { "\n    <deny send_destination=\"\($0)\" send_type=\"method_call\"/>" } ?? ""
        return """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socketPath)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
            <allow user="*"/>\(deny)
          </policy>
        </busconfig>
        """
    }
}
