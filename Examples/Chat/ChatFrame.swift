import BleCore
import Foundation

/// The chat's wire format, the application-layer protocol seed 001 asks for: every packet
/// carries a type, a message number, its sequence number and the packet count, so the receiver
/// reassembles messages longer than the MTU and acknowledges each packet.
struct ChatFrame: Equatable {
    enum Kind: UInt8 { case data = 1, ack = 2, heartbeat = 3 }

    static let service = CBUUID(string: "12345678-1234-1234-1234-1234567890AB")
    /// Written by the central (write without response): frames to the peripheral.
    static let receive = CBUUID(string: "12345678-1234-1234-1234-1234567890AC")
    /// Notified by the peripheral: frames to the central.
    static let send = CBUUID(string: "12345678-1234-1234-1234-1234567890AD")
    static let namePrefix = "Chat-"
    static let headerLength = 4

    var kind: Kind
    var message: UInt8
    var sequence: UInt8
    var total: UInt8
    var payload = Data()

    var encoded: Data { Data([kind.rawValue, message, sequence, total]) + payload }

    /// Nil for anything that is not a chat frame (a peer must not crash on a stranger's bytes).
    init?(_ data: Data) {
        let bytes = [UInt8](data)
        guard bytes.count >= Self.headerLength, let kind = Kind(rawValue: bytes[0]) else { return nil }
        self.init(kind: kind, message: bytes[1], sequence: bytes[2], total: bytes[3], payload: Data(bytes[Self.headerLength...]))
        guard kind != .data || (total > 0 && sequence < total) else { return nil }
    }

    init(kind: Kind, message: UInt8, sequence: UInt8, total: UInt8, payload: Data = Data()) {
        self.kind = kind
        self.message = message
        self.sequence = sequence
        self.total = total
        self.payload = payload
    }

    /// `text` cut into data frames of at most `packetLength` bytes each (header included).
    static func split(_ text: String, message: UInt8, packetLength: Int) -> [ChatFrame] {
        let bytes = [UInt8](text.utf8)
        let room = max(1, packetLength - headerLength)
        let chunks = stride(from: 0, to: max(bytes.count, 1), by: room).map { Data(bytes[$0..<min($0 + room, bytes.count)]) }
        let total = UInt8(clamping: chunks.count)
        return chunks.prefix(Int(total)).enumerated().map { ChatFrame(kind: .data, message: message, sequence: UInt8($0.offset), total: total, payload: $0.element) }
    }
}
