/// What `AsyncBleManager.scan(_:onDiscovered:)` does with a discovered peripheral.
public enum ScanAction: Sendable {
    /// Keep scanning.
    case skip
    /// Stop scanning and connect to it; `scan` returns the connected peripheral.
    case connect
    /// Stop scanning; `scan` throws `AsyncBleClientError.scanStopped`.
    case stop
}
