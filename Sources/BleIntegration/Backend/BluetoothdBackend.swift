import BleCore
import BleDBus
import BleTestSupport
import BlueZVocabulary
import Foundation

/// The real bluetoothd on the system bus, as `scripts/bluez-vm/run` starts it in the guest:
/// two btvirt controllers, hci0 serving the peer and hci1 as the central.
@BleLoop
public final class BluetoothdBackend: IntegrationBackend {
    /// Always `.bluetoothd`.
    public let kind = BackendKind.bluetoothd
    /// The system bus.
    public let busAddress = BusAddress.system
    /// The system bus.
    public let bleBus = BleBus.system
    /// `hci1`.
    public let centralAdapter = "hci1"
    /// `hci0`.
    public let peripheralAdapter = "hci0"
    /// Nothing to add: outside programs find the system bus by themselves.
    public let peerEnvironment: [String: String] = [:]
    private let controlScript: String?

    /// Uses the guest's `BLEKIT_VM_BLUETOOTHD_CONTROL` script for restarts, when there is one.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        controlScript = environment["BLEKIT_VM_BLUETOOTHD_CONTROL"]
    }

    /// Runs the VM's control script (`restart`), which returns once both adapters are back and
    /// powered. Without the script (not in the VM) a restart is refused: BleKit never restarts
    /// the machine's own bluetoothd.
    public func restartDaemon() async throws {
        guard let controlScript else {
            throw BackendError.unavailable("restarting bluetoothd needs BLEKIT_VM_BLUETOOTHD_CONTROL (set by scripts/bluez-vm/run)")
        }
        let result = try await Self.run([controlScript, "restart"], timeout: 40)
        guard result.status == 0 else {
            throw BackendError.restartFailed("\(controlScript) restart exited with \(result.status.map(String.init) ?? "a timeout"): \(result.output)")
        }
    }

    /// Whether `org.bluez` still has an owner. bluetoothd 5.66 segfaults (stage 2's console:
    /// "Segmentation fault ... bluetoothd") while a GATT application with a subscribed
    /// characteristic goes away: its log ends at `Local GATT service removed`, then
    /// `ccc_write_cb() External CCC write received with value: 0x0000` (twice); every later
    /// scenario then failed with D-Bus's activation error. Now the scenario during which it
    /// died fails saying so, and the daemon is started again for the next one.
    public func daemonGone() async -> String? {
        guard let connection = try? await Connection.open(busAddress) else { return "the system bus could not be reached" }
        defer { connection.close() }
        let reply = try? await connection.call(destination: FreedesktopDBus.busName, path: FreedesktopDBus.path, interface: FreedesktopDBus.interface,
                                               member: "NameHasOwner", arguments: [.string(BlueZ.busName)])
        if case .boolean(true)? = reply?.first { return nil }
        var text = "bluetoothd exited during this scenario or the clean-up of the one before (org.bluez has no owner; the end of that part of bluetoothd.log shows what it did last)"
        guard let controlScript else { return text }
        do {
            let result = try await Self.run([controlScript, "start"], timeout: 40)
            text += result.status == 0 ? "; started again for the next scenario" : "; starting it again failed: \(result.output)"
        } catch {
            text += "; starting it again failed: \(error)"
        }
        return text
    }

    /// Nothing to stop: the guest's daemons belong to the VM.
    public func tearDown() {}

    /// Runs a program to completion off the loop (it blocks on the child's output).
    nonisolated static func run(_ arguments: [String], timeout: TimeInterval) async throws -> (status: Int32?, output: String) {
        let child = try ChildProcess(arguments: arguments, standardErrorPath: nil)
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: timeout)) }
        }
    }
}
