import BleDBus
import BlueZVocabulary
import Dispatch
import Foundation

// @unchecked: a Sendable class must be final or have only NSObject above it, and CoreBluetooth's
// shape needs subclasses (both managers are `CBManager`s). It has no stored state.
/// What the central and peripheral managers share, as CoreBluetooth's `CBManager`: their state
/// and whether this process may use Bluetooth.
public class Manager: @unchecked Sendable {
    init() {}

    /// The manager's state; ``CentralManager`` and ``PeripheralManager`` report their own.
    public var state: ManagerState { .unknown }
    /// Why `state` is `unsupported` or `unauthorized`, if known.
    public var stateError: BleError? { nil }

    /// Whether this manager may use Bluetooth, from what bluetoothd's D-Bus policy did with
    /// its calls (iOS 13.0's instance property): `notDetermined` until bluetoothd answered,
    /// `denied` when the policy refused them (then `state` is `unauthorized`).
    public var authorization: ManagerAuthorization { ManagerAuthorization(state: state, error: stateError) }

    /// Whether this process may use Bluetooth (iOS 13.1's `CBManager.authorization`), asked of
    /// bluetoothd's D-Bus policy with a `Ping` on the bus of `CentralManagerOptions.defaults`:
    /// `allowedAlways` when bluetoothd answers, `denied` when the policy refuses the call,
    /// `restricted` when the bus's socket is refused, `notDetermined` when bluetoothd is not on
    /// the bus or does not answer within 5 s.
    ///
    /// It waits for the answer off BleKit's loop thread; on the loop thread (inside a delegate
    /// callback delivered there) it answers at once with the last verdict known: a manager's
    /// own, learned before its `…DidUpdateState`, or the last probe's (`notDetermined` before either).
    public class var authorization: ManagerAuthorization { authorization(on: CentralManagerOptions.defaults.bus) }

    /// `authorization` asked on `bus` (a private bus with BleSim, say) instead of the bus of
    /// `CentralManagerOptions.defaults`.
    public static func authorization(on bus: BleBus) -> ManagerAuthorization { AuthorizationProbe.verdict(bus: bus) }
}

/// Asks bluetoothd's D-Bus policy whether this process may call it.
enum AuthorizationProbe {
    private static let lastVerdict = Locked(ManagerAuthorization.notDetermined)
    // A Ping is one round trip; the margin is for a loaded machine, where the bus itself is slow to open.
    private static let timeout: Duration = .seconds(5)

    /// What a manager learned from bluetoothd's answers (its state turned known): the verdict
    /// `CBManager.authorization` gives on the loop thread, where it cannot wait for a probe —
    /// inside `centralManagerDidUpdateState`, where iOS apps ask it.
    static func learned(state: ManagerState, error: BleError?) {
        let verdict = ManagerAuthorization(state: state, error: error)
        if verdict != .notDetermined { lastVerdict.value = verdict }
    }

    static func verdict(bus: BleBus) -> ManagerAuthorization {
        if MainLoop.shared.isCurrent { return lastVerdict.value }
        let answer = Locked(ManagerAuthorization.notDetermined)
        let done = DispatchSemaphore(value: 0)
        LoopBridge.later {
            Task { @BleLoop in
                answer.value = await probe(bus)
                done.signal()
            }
        }
        done.wait()
        lastVerdict.value = answer.value
        return answer.value
    }

    @BleLoop private static func probe(_ bus: BleBus) async -> ManagerAuthorization {
        let address: BusAddress
        switch bus {
        case .system: address = .system
        case .address(let text): address = .address(text)
        }
        let connection: Connection
        do {
            connection = try await Connection.open(address, timeout: timeout)
        } catch {
            return ManagerAuthorization(state: .unsupported, error: BleError.from(error, operation: "opening the bus"))
        }
        defer { connection.close() }
        do {
            _ = try await connection.call(destination: BlueZ.service, path: .root, interface: FreedesktopDBus.Peer.interface,
                                          member: FreedesktopDBus.Peer.ping, timeout: timeout)
            return .allowedAlways
        } catch {
            return ManagerAuthorization(state: .unsupported, error: BleError.from(error, operation: FreedesktopDBus.Peer.ping))
        }
    }
}
