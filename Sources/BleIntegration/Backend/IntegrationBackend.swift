import BleCore
import BleDBus
import Foundation

/// Which BlueZ a scenario runs against.
public enum BackendKind: String, Sendable, Codable, CaseIterable {
    /// The real bluetoothd 5.66, with virtual controllers (in a VM, `make test-bluez`).
    case bluetoothd
    /// BleSim on a private bus (`make test`).
    case bleSim
}

/// A BlueZ to run scenarios against, with the controls that only a backend has: restarting
/// the daemon and telling outside programs where it is.
@BleLoop
public protocol IntegrationBackend: AnyObject {
    /// Which BlueZ this is.
    var kind: BackendKind { get }
    /// The bus bluetoothd (or BleSim) is on.
    var busAddress: BusAddress { get }
    /// The same bus, as BleCore names it.
    var bleBus: BleBus { get }
    /// The adapter the scenarios' central uses.
    var centralAdapter: String { get }
    /// The adapter the peer peripheral is served from.
    var peripheralAdapter: String { get }
    /// The environment an outside program (a Python peer) needs to find this BlueZ.
    var peerEnvironment: [String: String] { get }
    /// Stops the daemon with SIGTERM and starts it again; returns once both adapters are back
    /// and powered.
    func restartDaemon() async throws
    /// Removes what earlier scenarios left behind (devices, bonds) so each starts afresh; the
    /// extension gives every backend the same one.
    func reset() async throws
    /// Stops what the backend started.
    func tearDown()
}

/// A backend could not do what a scenario asked.
public enum BackendError: Error, CustomStringConvertible {
    /// The daemon did not come back after a restart.
    case restartFailed(String)
    /// This backend cannot do it (and says why).
    case unavailable(String)

    /// A readable explanation.
    public var description: String {
        switch self {
        case .restartFailed(let detail): return "restarting bluetoothd failed: \(detail)"
        case .unavailable(let detail): return detail
        }
    }
}

extension IntegrationBackend {
    /// Gives the next scenario a clean slate: both adapters powered, no link left up, and no
    /// device objects (bonds included) from earlier scenarios. A link is taken down and
    /// awaited before its device is removed, because removing a device whose link was still
    /// going down left the next connect to it hanging on the real daemon.
    public func reset() async throws {
        let connection = try await Connection.open(busAddress)
        defer { connection.close() }
        let reply = try await connection.call(destination: "org.bluez", path: .root,
                                              interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        guard let first = reply.first else { return }
        let objects = try BlueZShapes.managedObjects(first)
        for (path, interfaces) in objects.sorted(by: { $0.key < $1.key }) {
            guard let adapter = interfaces["org.bluez.Adapter1"], adapter["Powered"] == .boolean(false) else { continue }
            try await ScenarioContext.setPowered(true, adapter: path, using: connection, deadline: .seconds(15))
        }
        for (path, interfaces) in objects {
            guard let device = interfaces["org.bluez.Device1"], device["Connected"] == .boolean(true) else { continue }
            let down = PropertyWait(connection: connection, path: path, interface: "org.bluez.Device1", name: "Connected", value: .boolean(false))
            try down.arm()
            _ = try? await connection.call(destination: "org.bluez", path: path, interface: "org.bluez.Device1", member: "Disconnect")
            try? await down.wait(deadline: .seconds(15))
        }
        for (path, interfaces) in objects where interfaces["org.bluez.Device1"] != nil {
            guard let adapter = path.parent else { continue }
            _ = try? await connection.call(destination: "org.bluez", path: adapter, interface: "org.bluez.Adapter1",
                                           member: "RemoveDevice", arguments: [.objectPath(path)])
        }
    }
}
