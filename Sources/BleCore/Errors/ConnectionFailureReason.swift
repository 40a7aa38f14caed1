/// The reason strings bluetoothd (5.62+, `src/error.h`) puts in `Failed` replies to `Connect`.
/// LE connects use `le-connection-*`, but a Connect cancelled by Disconnect fails with
/// `br-connection-canceled` even on LE (observed on 5.66).
public enum ConnectionFailureReason: String, Sendable, CaseIterable {
    /// le-connection-invalid-arguments
    case invalidArguments = "invalid-arguments"
    /// le-connection-adapter-not-powered
    case adapterNotPowered = "adapter-not-powered"
    /// le-connection-not-supported
    case notSupported = "not-supported"
    /// le-connection-already-connected
    case alreadyConnected = "already-connected"
    /// le-connection-bad-socket
    case badSocket = "bad-socket"
    /// le-connection-memory-allocation
    case memoryAllocation = "memory-allocation"
    /// le-connection-busy
    case busy = "busy"
    /// le-connection-refused
    case refused = "refused"
    /// le-connection-create-socket
    case createSocket = "create-socket"
    /// le-connection-timeout
    case timeout = "timeout"
    /// le-connection-concurrent-connection-limit
    case concurrentConnectionLimit = "concurrent-connection-limit"
    /// le-connection-abort-by-remote
    case abortByRemote = "abort-by-remote"
    /// le-connection-abort-by-local: often RF coexistence; the device did connect briefly (bleak #1220).
    case abortByLocal = "abort-by-local"
    /// le-connection-link-layer-protocol-error
    case linkLayerProtocolError = "link-layer-protocol-error"
    /// le-connection-gatt-browsing
    case gattBrowsing = "gatt-browsing"
    /// le-connection-key-missing
    case keyMissing = "key-missing"
    /// le-connection-unknown
    case unknown = "unknown"
    /// br-connection-canceled (a pending Connect cancelled by Disconnect)
    case canceled = "canceled"
    /// br-connection-sdp-search (ConnectProfile on LE)
    case sdpSearch = "sdp-search"
    /// br-connection-profile-unavailable
    case profileUnavailable = "profile-unavailable"
    /// br-connection-page-timeout
    case pageTimeout = "page-timeout"

    /// Parses `le-connection-…` / `br-connection-…`.
    static func parse(_ message: String) -> (reason: ConnectionFailureReason, isLE: Bool)? {
        for (prefix, isLE) in [(BlueZ.ErrorMessage.leConnectionPrefix, true), (BlueZ.ErrorMessage.bredrConnectionPrefix, false)] where message.hasPrefix(prefix) {
            if let reason = ConnectionFailureReason(rawValue: String(message.dropFirst(prefix.count))) { return (reason, isLE) }
        }
        return nil
    }

    /// True for failures worth retrying after a pause (bleak-retry-connector's list).
    public var isTransient: Bool {
        switch self {
        case .abortByLocal, .abortByRemote, .busy, .timeout, .linkLayerProtocolError, .gattBrowsing, .unknown: return true
        default: return false
        }
    }
}
