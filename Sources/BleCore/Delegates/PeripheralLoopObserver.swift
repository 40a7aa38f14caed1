import BleDBus
import Foundation

/// A listener inside the package (the DSL's command engine) that runs on the loop with each
/// event's data, before the delegates' callbacks are queued: no hop to a callback queue and
/// back, and no value read back from shared state.
@BleLoop
package protocol PeripheralLoopObserver: AnyObject {
    /// A read's result or a notification, with its bytes (nil with an error).
    func peripheral(_ peripheral: Peripheral, didReceive value: Data?, for characteristic: Characteristic, error: BleError?)
    /// A write with response ended (or a write of either kind was refused before it was sent).
    func peripheral(_ peripheral: Peripheral, didWrite characteristic: Characteristic, error: BleError?)
    /// Notifications were turned on or off (or failed to be).
    func peripheral(_ peripheral: Peripheral, notificationStateOf characteristic: Characteristic, isOn: Bool, error: BleError?)
    /// Write-without-response flow control has room again.
    func peripheralIsReadyToWriteWithoutResponse(_ peripheral: Peripheral)
    /// The link went down (`error` nil when the app asked).
    func peripheral(_ peripheral: Peripheral, didLoseLink error: BleError?)
    /// A descriptor read's result (nil with an error).
    func peripheral(_ peripheral: Peripheral, didReceive value: Data?, for descriptor: Descriptor, error: BleError?)
    /// A notification or indication arrived (never a read's answer); called before `didReceive`.
    func peripheral(_ peripheral: Peripheral, didNotify value: Data, for characteristic: Characteristic)
}

extension PeripheralLoopObserver {
    /// Observers that do not read descriptors ignore their results.
    package func peripheral(_ peripheral: Peripheral, didReceive value: Data?, for descriptor: Descriptor, error: BleError?) {}
    /// Ignored unless an observer needs to tell notifications from read answers.
    package func peripheral(_ peripheral: Peripheral, didNotify value: Data, for characteristic: Characteristic) {}
}

/// A weak reference to a loop observer.
@BleLoop
struct WeakLoopObserver {
    weak var value: PeripheralLoopObserver?
}
