import BleCore
import Foundation

/// The GATT database and the little command protocol of `PeerPeripheral`, shared by the peer
/// and the scenarios that talk to it.
public enum PeerProtocol {
    /// The name the peer advertises (short enough for a 31-byte legacy advertisement with a
    /// 128-bit service UUID).
    public static let name = "BlePeer"
    /// The peer's primary service.
    public static let service = BluetoothUUID(string: "8b6e0001-5b1c-4d8e-9a61-0d3a2f6c7e10")
    /// Read, write and write-without-response: a stored value (long reads and writes work).
    public static let data = BluetoothUUID(string: "8b6e0002-5b1c-4d8e-9a61-0d3a2f6c7e10")
    /// Write and write-without-response: commands, answered on `response`.
    public static let command = BluetoothUUID(string: "8b6e0003-5b1c-4d8e-9a61-0d3a2f6c7e10")
    /// Notify: the answers to `command`.
    public static let response = BluetoothUUID(string: "8b6e0004-5b1c-4d8e-9a61-0d3a2f6c7e10")
    /// Read only.
    public static let readOnly = BluetoothUUID(string: "8b6e0005-5b1c-4d8e-9a61-0d3a2f6c7e10")
    /// The user description of `data`.
    public static let dataDescription = "peer data"
    /// The value of `readOnly`.
    public static let readOnlyValue = Data("read-only".utf8)
    /// The first value of `data`.
    public static let initialData = Data([0x10, 0x20, 0x30])

    /// The commands `command` understands. The answer's first byte is the opcode | 0x80.
    public enum Opcode: UInt8, Sendable {
        /// `01 payload…` → one notification `81 payload…`.
        case echo = 0x01
        /// `02 n` → n notifications `82 index n` followed by 16 bytes of `index`.
        case burst = 0x02
        /// `03` → a notification `83 sequence` every 50 ms until `stopStream`.
        case startStream = 0x03
        /// `04` → the stream stops, then one notification `84`.
        case stopStream = 0x04
    }

    /// The 16 payload bytes of burst packet `index`.
    public static func burstPacket(_ index: UInt8, of count: UInt8) -> Data {
        Data([0x82, index, count]) + Data(repeating: index, count: 16)
    }
}
