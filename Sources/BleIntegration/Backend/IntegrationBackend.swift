import BleCore
import BleDBus
import BlueZVocabulary
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
    /// After a scenario: nil when the daemon is still there; otherwise what happened (it
    /// exited, and was started again for the next scenario, or could not be).
    func daemonGone() async -> String?
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
        let reply = try await connection.call(destination: BlueZ.busName, path: .root,
                                              interface: FreedesktopDBus.ObjectManager.interface, member: FreedesktopDBus.ObjectManager.getManagedObjects)
        guard let first = reply.first else { return }
        let objects = try BlueZShapes.managedObjects(first)
        for (path, interfaces) in objects.sorted(by: { $0.key < $1.key }) {
            guard let adapter = interfaces[BlueZ.Adapter1.interface], adapter[BlueZ.Adapter1.powered] == false else { continue }
            try await ScenarioContext.setPowered(true, adapter: path, using: connection, deadline: .seconds(15))
        }
        for (path, interfaces) in objects {
            guard let device = interfaces[BlueZ.Device1.interface], device[BlueZ.Device1.connected] == true else { continue }
            let down = PropertyWait(connection: connection, path: path, interface: BlueZ.Device1.interface, name: BlueZ.Device1.connected.name, value: .boolean(false))
            try down.arm()
            _ = try? await connection.call(destination: BlueZ.busName, path: path, interface: BlueZ.Device1.interface, member: BlueZ.Device1.Method.disconnect)
            try? await down.wait(deadline: .seconds(15))
        }
        for (path, interfaces) in objects where interfaces[BlueZ.Device1.interface] != nil {
            guard let adapter = path.parent else { continue }
            _ = try? await connection.call(destination: BlueZ.busName, path: adapter, interface: BlueZ.Adapter1.interface,
                                           member: BlueZ.Adapter1.Method.removeDevice, arguments: [.objectPath(path)])
        }
    }
}
