import Foundation

// @unchecked: the README's manager hands everything to BleDSL, which runs it on its own loop;
// this wrapper holds no state of its own.
/// The README's `BlueToothManager`, reachable from outside this module so that
/// Examples/DeviceManager can run it as a program. The README's own types stay internal and
/// untouched; this only forwards to them.
public final class ReadmeDeviceManager: @unchecked Sendable {
    private let manager = BlueToothManager()

    /// Builds the README's manager; its `BleManager()` picks up `CentralManagerOptions.defaults`.
    public init() {}

    /// The README's `startScan()`: FFE0 devices, filtered to names starting with "MyDevice".
    public func startScan() { manager.startScan() }

    /// The README's `connect(uuid:)`, which reconnects by itself when the link drops.
    public func connect(uuid: String) { manager.connect(uuid: uuid) }

    /// The README's single-packet command (0xAA).
    public func sendQueryStatus() { manager.sendQueryStatus() }

    /// The README's multi-packet command (0xBB, three packets).
    public func sendLongData() { manager.sendLongData() }

    /// The README's streaming command (0xCC).
    public func startNotify() { manager.startNotify() }
}

// @unchecked: every stored property of the transcript is behind its lock.
extension ReadmeTranscript: @unchecked Sendable {}
