import BleDBus
import BleTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

// MARK: Deadlines

/// An awaited event did not come before its deadline.
struct DeadlineExceeded: Error, CustomStringConvertible {
    let what: String
    let timeout: Duration
    var description: String { "\(what) did not happen within \(timeout)" }
}

/// A thread-safe queue of events with a waiting side that gives up after a deadline: how tests
/// wait for something that happens on the loop thread, without sleeping.
final class Mailbox<Element: Sendable>: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Element, any Error>
        let deadline: Task<Void, Never>
    }

    private struct State {
        var items: [Element] = []
        var received = 0
        var waiter: Waiter?
        var nextID: UInt64 = 1
    }

    private let state = Mutex(State())
    private let name: String

    init(_ name: String = "event") {
        self.name = name
    }

    /// Adds an event; wakes the waiter, if any. Safe from any thread.
    func post(_ element: Element) {
        let waiter = state.withLock { state -> Waiter? in
            state.received += 1
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.items.append(element)
            return nil
        }
        if let waiter {
            waiter.deadline.cancel()
            waiter.continuation.resume(returning: element)
        }
    }

    /// How many events were posted so far, taken or not.
    var receivedCount: Int { state.withLock { $0.received } }

    /// The events posted but not taken yet.
    var pending: [Element] { state.withLock { $0.items } }

    /// The next event, waiting at most `timeout` (at the tests' clock) for it.
    func next(within timeout: Duration = .seconds(10)) async throws -> Element {
        let timeout = TestTime.scaled(timeout)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Element, any Error>) in
            let name = self.name
            let result = state.withLock { state -> Result<Element, any Error>? in
                if !state.items.isEmpty { return .success(state.items.removeFirst()) }
                guard state.waiter == nil else {
                    return .failure(DeadlineExceeded(what: "a second concurrent wait on \(name)", timeout: .zero))
                }
                let id = state.nextID
                state.nextID += 1
                let deadline = Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    guard !Task.isCancelled else { return }
                    self?.expire(id: id, timeout: timeout)
                }
                state.waiter = Waiter(id: id, continuation: continuation, deadline: deadline)
                return nil
            }
            if let result { continuation.resume(with: result) }
        }
    }

    /// The next `count` events.
    func next(_ count: Int, within timeout: Duration = .seconds(10)) async throws -> [Element] {
        var result: [Element] = []
        for _ in 0..<count { result.append(try await next(within: timeout)) }
        return result
    }

    private func expire(id: UInt64, timeout: Duration) {
        let waiter = state.withLock { state -> Waiter? in
            guard state.waiter?.id == id else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.continuation.resume(throwing: DeadlineExceeded(what: name, timeout: timeout))
    }
}

/// Runs `operation`, failing with `DeadlineExceeded` if it has not finished after `timeout` (at
/// the tests' clock). The operation is cancelled then, so it must honour cancellation (D-Bus
/// calls do).
func withDeadline<T: Sendable>(_ timeout: Duration = .seconds(10), _ what: String,
                               _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let timeout = TestTime.scaled(timeout)
    return try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw DeadlineExceeded(what: what, timeout: timeout)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw DeadlineExceeded(what: what, timeout: timeout) }
        return first
    }
}

/// Returns once everything enqueued on the shared loop before this call has run.
func loopTurn() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        MainLoop.shared.perform { continuation.resume() }
    }
}

/// The `DBusError` a throwing body ends with, or nil when it returns (another error is recorded
/// as an issue).
@BleLoop
func dbusError<T>(_ body: @BleLoop () async throws -> T) async -> DBusError? {
    do {
        _ = try await body()
        return nil
    } catch let error as DBusError {
        return error
    } catch {
        Issue.record("expected a DBusError, got \(error)")
        return nil
    }
}

/// A value shared between a test and handlers on the loop, mutated only on the loop.
@BleLoop
final class LoopBox<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}

// MARK: The private bus

/// Starts a private bus (`PrivateBus()`) for one test, off the loop thread.
///
/// `PrivateBus()` blocks until its daemon prints its address. Called directly from a `@BleLoop`
/// test it would stall the shared loop, and with it every other test's connections and timers,
/// for that time; `PrivateBus.start` waits on a thread of its own, so neither the loop nor a
/// thread of the test pool (one per core) is held.
func startPrivateBus() async throws -> PrivateBus {
    try await PrivateBus.start()
}

/// Two connections on `bus`: a client and a server that exports objects.
@BleLoop
func openPair(_ bus: PrivateBus) async throws -> (client: Connection, server: Connection) {
    let client = try await Connection.open(bus.busAddress)
    let server = try await Connection.open(bus.busAddress)
    return (client, server)
}

extension Connection {
    /// Calls a method of the bus daemon itself.
    func callBus(_ member: String, _ arguments: [DBusValue] = []) async throws(DBusError) -> [DBusValue] {
        try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                       interface: "org.freedesktop.DBus", member: member, arguments: arguments)
    }

    /// Claims a well-known name (`RequestName` with flags 0) and checks we became its owner.
    func claimName(_ name: String) async throws {
        let reply = try await callBus("RequestName", [.string(name), .uint32(0)])
        // 1 is DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER.
        #expect(reply == [.uint32(1)], "RequestName \(name) answered \(reply)")
    }

    /// A round trip to the bus daemon: once it returns, the daemon has processed everything
    /// this connection sent before (match rules included).
    func syncWithBus() async throws {
        _ = try await callBus("GetId")
    }
}

// MARK: Exported test objects

enum Echo {
    static let interface = "com.example.Echo"

    /// An interface whose `Echo` method takes arguments of `types` and returns them unchanged.
    static func interface(types: [DBusType]) -> ExportedInterface {
        let arguments = types.enumerated().map { ArgumentDescription("arg\($0.offset)", $0.element) }
        return ExportedInterface(interface, methods: [
            ExportedMethod("Echo", in: arguments, out: arguments) { call in call.reply(call.arguments) },
        ])
    }
}

extension Connection {
    /// Exports an echo object for `values`' types at `path` on `server` and calls it from `self`.
    func echo(_ values: [DBusValue], through server: Connection, path: ObjectPath = "/echo") async throws(DBusError) -> [DBusValue] {
        server.objects.register(path, interfaces: [Echo.interface(types: values.map(\.type))])
        return try await call(destination: server.uniqueName, path: path, interface: Echo.interface,
                              member: "Echo", arguments: values, timeout: .seconds(60))
    }
}

// MARK: Values

enum Nesting {
    /// `depth` arrays around an `i`, one element per level, the innermost holding `leaf`.
    static func arrays(depth: Int, leaf: Int32 = 7) -> DBusValue {
        var value = DBusValue.int32(leaf)
        var type = DBusType.int32
        for _ in 0..<depth {
            value = .array(element: type, [value])
            type = .array(type)
        }
        return value
    }

    /// `depth` single-field structures around an `i`.
    static func structures(depth: Int, leaf: Int32 = 7) -> DBusValue {
        var value = DBusValue.int32(leaf)
        for _ in 0..<depth { value = .structure([value]) }
        return value
    }

    /// `depth` variants around an `s`.
    static func variants(depth: Int) -> DBusValue {
        var value = DBusValue.string("core")
        for _ in 0..<depth { value = .variant(value) }
        return value
    }
}

/// A seeded generator, so that "random" inputs are the same on every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

// MARK: File descriptors

enum Descriptors {
    /// A connected pair of Unix stream sockets, close-on-exec.
    static func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return (fds[0], fds[1])
    }

    /// What `/proc/self/fd/N` links to, e.g. `socket:[1234]`.
    static func target(of descriptor: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)")
    }

    /// How many of this process's descriptors refer to `target` (dups included). Counting one
    /// kernel object, not all descriptors, keeps the count exact while other tests run.
    static func count(referringTo target: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)")) == target
        }.count
    }

    static func write(_ text: String, to descriptor: Int32) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) } == bytes.count
    }

    /// Reads what is available within `timeout`, up to `limit` bytes; "" on timeout or EOF.
    static func read(from descriptor: Int32, limit: Int = 4096, timeout: Duration = .seconds(5)) -> String {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&poller, 1, milliseconds) == 1 else { return "" }
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = Glibc.read(descriptor, &buffer, limit)
        guard count > 0 else { return "" }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// True when `descriptor` is an open descriptor of this process.
    static func isOpen(_ descriptor: Int32) -> Bool {
        fcntl(descriptor, F_GETFD) != -1
    }
}

// MARK: Child processes

/// The result of running a program to its end.
struct ProgramOutput: Sendable {
    var status: Int32
    var output: String
}

/// Runs a program with `posix_spawn`, reads its whole stdout (stderr is merged into it) until
/// EOF and only then reaps it, on a thread of its own so that neither the loop nor the
/// cooperative pool blocks. The child gets a clean signal mask and no descriptor but its pipe.
func runProgram(_ arguments: [String], timeout: Duration = .seconds(20)) async throws -> ProgramOutput {
    let mailbox = Mailbox<Result<ProgramOutput, POSIXError>>("\(arguments.first ?? "program") to exit")
    let thread = Thread {
        mailbox.post(spawnAndCollect(arguments))
    }
    thread.start()
    return try await mailbox.next(within: timeout).get()
}

private func spawnAndCollect(_ arguments: [String]) -> Result<ProgramOutput, POSIXError> {
    // A socket pair rather than a pipe: it is created close-on-exec atomically, so no child
    // spawned meanwhile by another test can inherit our end and hold EOF back.
    let pipeEnds: [Int32]
    do {
        let pair = try Descriptors.socketPair()
        pipeEnds = [pair.0, pair.1]
    } catch {
        return .failure(POSIXError(.EMFILE))
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    sigaddset(&defaults, SIGPIPE)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var environment = ProcessInfo.processInfo.environment
    // Keep outside tools away from any real bus of the machine.
    environment["DBUS_SESSION_BUS_ADDRESS"] = "disabled:"
    environment["DBUS_SYSTEM_BUS_ADDRESS"] = "disabled:"
    let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { envp.forEach { free($0) } }

    var pid: pid_t = 0
    let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
    close(pipeEnds[1])
    guard status == 0 else {
        close(pipeEnds[0])
        return .failure(POSIXError(POSIXErrorCode(rawValue: status) ?? .ENOENT))
    }
    var output = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(pipeEnds[0], &chunk, chunk.count)
        if count > 0 {
            output.append(contentsOf: chunk[0..<count])
        } else if count == 0 || errno != EINTR {
            break
        }
    }
    close(pipeEnds[0])
    var exitStatus: Int32 = 0
    while waitpid(pid, &exitStatus, 0) < 0 && errno == EINTR {}
    // WEXITSTATUS, which Swift does not import.
    let code = (exitStatus & 0x7f) == 0 ? (exitStatus >> 8) & 0xff : 128 + (exitStatus & 0x7f)
    return .success(ProgramOutput(status: code, output: String(decoding: output, as: UTF8.self)))
}
