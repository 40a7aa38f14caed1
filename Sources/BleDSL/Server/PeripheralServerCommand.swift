import Foundation

/// One command a local peripheral answers: the mirror image of `PeripheralOperationCommand`.
///
/// Where the central's command says what to write and which packets belong to the answer, the
/// server's says which written packets belong to a request (`filterRequest`), when the request
/// is complete (`checkRequest`, for requests longer than one write), and what to answer
/// (`response`), which `PeripheralServer` splits by the central's MTU and notifies with flow control.
public protocol PeripheralServerCommand {
    /// Returns the part of a written packet that belongs to this command (strip headers), or
    /// nil when it is another command's.
    func filterRequest(_ data: Data) -> Data?
    /// Decides on the request so far (`dataGroup`, the buffer of the previous `.goon`) and the
    /// new filtered packet: `.success` completes it, `.goon` waits for more, `.failure` drops it.
    func checkRequest(_ dataGroup: [Data], data: Data) -> CheckResponseResult
    /// The bytes to answer a complete request with (nil: no answer).
    func response(to request: [Data], from central: Central) -> Data?
    /// How to split the response into notifications. Default: the central's MTU − 3.
    func getLengthProtocol() -> PeripheralCommandLengthProtocol
}

extension PeripheralServerCommand {
    /// Every packet is a whole request.
    public func checkRequest(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: dataGroup + [data]) }
    /// Packets as large as the central's link allows.
    public func getLengthProtocol() -> PeripheralCommandLengthProtocol { MTUPeripheralCommandLength() }
}

/// A command from two closures, for servers that fit in a few lines.
public struct ServerCommand: PeripheralServerCommand {
    private let filter: (Data) -> Data?
    private let answer: ([Data], Central) -> Data?
    private let length: PeripheralCommandLengthProtocol?

    /// Answers packets starting with `opcode` (or every packet, when nil) with `respond`'s bytes.
    public init(opcode: UInt8? = nil, length: PeripheralCommandLengthProtocol? = nil,
                respond: @escaping (_ request: Data, _ central: Central) -> Data?) {
        filter = { data in opcode.map { data.first == $0 ? data : nil } ?? data }
        answer = { request, central in respond(request.reduce(Data(), +), central) }
        self.length = length
    }

    /// Claims packets `filter` returns bytes for.
    public func filterRequest(_ data: Data) -> Data? { filter(data) }
    /// `respond`'s bytes.
    public func response(to request: [Data], from central: Central) -> Data? { answer(request, central) }
    /// The given length protocol, else the central's MTU − 3.
    public func getLengthProtocol() -> PeripheralCommandLengthProtocol { length ?? MTUPeripheralCommandLength() }
}
