/// How many bytes of `cmdData` go into each write: asked once per chunk, and `reset()` before
/// every command (so a `FirstPeripheralCommandLength` starts over each time).
public protocol PeripheralCommandLengthProtocol {
    /// The length of the next chunk. Zero or less is an error (`PeripheralCommandError.invalidChunkLength`).
    func currentLength() -> Int
    /// Called before the first chunk of each command.
    func reset()
}

extension PeripheralCommandLengthProtocol {
    /// Stateless protocols need no reset.
    public func reset() {}
}

/// Every chunk has the same length (20 bytes by default, FXBlueTooth's default).
public final class DefaultPeripheralCommandLength: PeripheralCommandLengthProtocol {
    /// Bytes per chunk; a write longer than this is split.
    public let length: Int

    /// Chunks of `length` bytes.
    public init(length: Int = 20) {
        self.length = length
    }

    /// Always `length`: the chunk size does not follow the MTU.
    public func currentLength() -> Int { length }
}

/// The first chunk has one length, the following ones another; starts over for every command.
public final class FirstPeripheralCommandLength: PeripheralCommandLengthProtocol {
    /// The first chunk's length.
    public let first: Int
    /// Every later chunk's length.
    public let then: Int
    private var isFirst = true

    /// A first-then length.
    public init(first: Int, then: Int) {
        self.first = first
        self.then = then
    }

    /// `first` once, then `then`.
    public func currentLength() -> Int {
        if isFirst {
            isFirst = false
            return first
        }
        return then
    }

    /// Back to `first`.
    public func reset() { isFirst = true }
}

/// Chunks as large as the link allows: `maximumWriteValueLength(for:)` of the write type (the
/// negotiated MTU − 3). The default when a command supplies no length protocol.
public final class MTUPeripheralCommandLength: PeripheralCommandLengthProtocol {
    /// Set by the engine before each command from the peripheral's MTU.
    var maximum = 20

    /// Follows the MTU.
    public init() {}

    /// MTU − 3.
    public func currentLength() -> Int { maximum }
}
