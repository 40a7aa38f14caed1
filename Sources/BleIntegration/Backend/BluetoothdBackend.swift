import BleCore
import BleDBus
import BleTestSupport
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
