import BleCore

/// What a central asks of an `AsyncPeripheralManager`, from its `requests()` sequence.
public enum AsyncATTRequests: Sendable {
    /// A read of a dynamic characteristic: set `request.value`, then `respond(to:withResult:)`.
    case read(ATTRequest)
    /// Writes (several in one batch for a prepared write): answer the first one once for all.
    case write([ATTRequest])
}
