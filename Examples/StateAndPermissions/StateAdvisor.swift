import BleCore
import ExampleSupport
import Foundation

// @unchecked: callbacks arrive on the main queue only.
/// What the user is told for each state — the Linux counterpart of seed 002's
/// `centralManagerDidUpdateState` switch over `state` and `authorization`.
final class StateAdvisor: CBCentralManagerDelegate, @unchecked Sendable {
    /// Each state change, as it came.
    private(set) var seen: [ManagerState] = []
    private var waiters: [(ManagerState, Completion)] = []

    /// The message for a state: what it means and what to do.
    static func advice(_ state: ManagerState, error: BleError?) -> String {
        switch state {
        case .poweredOn:
            return "Bluetooth is on: scanning and connecting work."
        case .poweredOff:
            return "Bluetooth is off. Turn it on: `bluetoothctl power on`; if it stays off, `rfkill unblock bluetooth`. BleKit resumes by itself when it comes on."
        case .unauthorized:
            return "This user may not use Bluetooth: the D-Bus policy of bluetoothd refuses it. Add the user to the 'bluetooth' group (`sudo usermod -aG bluetooth $USER`, then log out and in), or allow it in /etc/dbus-1/system.d/bluetooth.conf (a <policy group=\"bluetooth\"> with <allow send_destination=\"org.bluez\"/>). (On iOS: Settings › Privacy › Bluetooth.)"
        case .unsupported:
            if case .serviceUnknown? = error {
                return "bluetoothd is not running. Start it: `sudo systemctl start bluetooth` (and `systemctl enable bluetooth` to keep it). BleKit notices when it returns."
            }
            return "There is no Bluetooth adapter. Plug one in (or `modprobe btusb`); `bluetoothctl list` shows what BlueZ sees. BleKit notices when one appears."
        case .resetting:
            return "bluetoothd went away (restart or crash); BleKit waits for it to return and rebuilds its view."
        case .unknown:
            return "Not known yet: BleKit is still asking bluetoothd."
        }
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        let state = central.state
        seen.append(state)
        print("  state \(state): \(Self.advice(state, error: central.stateError))")
        fflush(nil)
        for (wanted, completion) in waiters where wanted == state { completion.signal() }
        waiters.removeAll { $0.0 == state }
    }

    /// A completion that fires on the next change to `state` (or at once when it is current).
    func next(_ state: ManagerState, current: ManagerState) -> Completion {
        let completion = Completion()
        if current == state { completion.signal() } else { waiters.append((state, completion)) }
        return completion
    }

    /// Against the real adapter: report, follow changes, and pass when Bluetooth is usable.
    @MainActor
    func watch(options: CentralManagerOptions, seconds: Double) async -> Int32 {
        let log = StepLog("StateAndPermissions", steps: ["state known"])
        let manager = CBCentralManager(delegate: self, queue: .main, options: options)
        let known = Completion()
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, manager.state == .unknown { _ = await next(.poweredOn, current: manager.state).wait(seconds: 0.5) }
        known.signal()
        log.step("state known", passed: manager.state == .poweredOn, "\(manager.state): \(Self.advice(manager.state, error: manager.stateError))")
        _ = await Completion().wait(seconds: max(0, deadline.timeIntervalSinceNow))
        manager.close()
        return log.finish()
    }
}
