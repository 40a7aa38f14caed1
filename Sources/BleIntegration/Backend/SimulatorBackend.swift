import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation

/// BleSim on a private bus, set up like the VM: two adapters with btvirt's addresses, the peer
/// served from hci0 and the central on hci1.
@BleLoop
public final class SimulatorBackend: IntegrationBackend {
    /// Always `.bleSim`.
    public let kind = BackendKind.bleSim
    /// The private bus.
    public let bus: PrivateBus
    /// The simulator.
    public let simulator: Simulator
    /// The private bus's address.
    public var busAddress: BusAddress { bus.busAddress }
    /// The private bus, for BleCore.
    public var bleBus: BleBus { .address(bus.address) }
    /// `hci1`.
    public let centralAdapter = "hci1"
    /// `hci0`.
    public let peripheralAdapter = "hci0"
    /// `DBUS_SYSTEM_BUS_ADDRESS` pointing at the private bus.
    public var peerEnvironment: [String: String] { bus.environment }

    /// btvirt's controller addresses in the VM: `00:AA:01:00:00:00` and `00:AA:01:01:00:01`.
    public static let configuration = Simulator.Configuration(adapters: [
        Simulator.AdapterSpec(name: "hci0", address: "00:AA:01:00:00:00"),
        Simulator.AdapterSpec(name: "hci1", address: "00:AA:01:01:00:01"),
    ])

    private init(bus: PrivateBus, simulator: Simulator) {
        self.bus = bus
        self.simulator = simulator
    }

    /// Starts a private bus and BleSim on it.
    public static func start() async throws -> SimulatorBackend {
        let bus = try await PrivateBus.start()
        let simulator = Simulator(configuration: configuration)
        do {
            try await simulator.start(on: bus.busAddress)
        } catch {
            bus.stopInBackground()
            throw error
        }
        return SimulatorBackend(bus: bus, simulator: simulator)
    }

    /// `Simulator.restart(.clean)`: bluetoothd's SIGTERM order, then a fresh daemon.
    public func restartDaemon() async throws {
        try await simulator.restart(.clean, on: bus.busAddress)
    }

    /// Nil: BleSim runs in this process and does not exit on its own.
    public func daemonGone() async -> String? { nil }

    /// Stops BleSim and the bus.
    public func tearDown() {
        simulator.stop(.clean)
        bus.stopInBackground()
    }
}
