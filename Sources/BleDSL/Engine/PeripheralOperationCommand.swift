import Foundation

/// One request/response exchange with a peripheral: what to send, which packets belong to the
/// answer, and when the answer is complete. Implement it once per command of your device's
/// protocol and run it with `DeviceCharacteristicValue.executable(option:completion:)`.
public protocol PeripheralOperationCommand {
    /// The bytes to write; split into chunks by `getLengthProtocol()`.
    var cmdData: Data { get }
    /// Returns the part of an incoming packet that belongs to this command (strip headers,
    /// transform), or nil to ignore the packet.
    func filterData(_ data: Data) -> Data?
    /// Decides on the buffer so far (`dataGroup`, the array returned by the previous `.goon`)
    /// and the new filtered packet (`data`).
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult
    /// How to chunk `cmdData`. Default: MTU − 3 of the link.
    func getLengthProtocol() -> PeripheralCommandLengthProtocol
    /// Seconds to wait for the response, restarted by each `.goon`. Default: 20.
    var timeOutInterval: TimeInterval { get }
    /// Forces the write type; nil (the default) picks write-without-response when the write
    /// characteristic supports it, else write with response.
    var writeType: CharacteristicWriteType? { get }
}

extension PeripheralOperationCommand {
    /// Passes every packet through unchanged.
    public func filterData(_ data: Data) -> Data? { data }
    /// Chunks of MTU − 3 bytes.
    public func getLengthProtocol() -> PeripheralCommandLengthProtocol { MTUPeripheralCommandLength() }
    /// 20 seconds, as FXBlueTooth.
    public var timeOutInterval: TimeInterval { 20 }
    /// Chosen from the characteristic's properties.
    public var writeType: CharacteristicWriteType? { nil }
}
