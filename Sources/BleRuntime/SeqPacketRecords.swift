/// Where `SeqPacketSocket` reads land: `SeqPacketSocket.packetsPerWakeUp` records of
/// `recordSize` bytes, allocated once rather than per read.
@BleLoop
package final class SeqPacketRecords {
    /// The buffer of every socket that needs no other: reads happen on the loop one at a time,
    /// and each record is copied out before any is delivered, so one buffer serves them all.
    /// A record of 1024 bytes holds any ATT value (at most 512 bytes) with room to spare; a
    /// longer datagram is cut to its head, as `recv` into a buffer of that size would.
    package static let shared = SeqPacketRecords(recordSize: 1024, reportsTooLong: false)

    /// The bytes each record holds.
    package let recordSize: Int
    let buffer: UnsafeMutablePointer<UInt8>
    let lengths: UnsafeMutablePointer<Int>
    /// Per record, 1 when the datagram was longer than `recordSize`; nil when longer
    /// datagrams are not told apart (they are cut to `recordSize` bytes).
    let truncated: UnsafeMutablePointer<UInt8>?

    /// Records of `recordSize` bytes. With `reportsTooLong`, a datagram longer than that is
    /// delivered as `.tooLong(length:)` (its whole length, none of its bytes) instead of cut.
    package init(recordSize: Int, reportsTooLong: Bool) {
        self.recordSize = max(1, recordSize)
        let count = SeqPacketSocket.packetsPerWakeUp
        buffer = .allocate(capacity: self.recordSize * count)
        lengths = .allocate(capacity: count)
        if reportsTooLong {
            let flags = UnsafeMutablePointer<UInt8>.allocate(capacity: count)
            flags.initialize(repeating: 0, count: count)
            truncated = flags
        } else {
            truncated = nil
        }
    }

    isolated deinit {
        buffer.deallocate()
        lengths.deallocate()
        truncated?.deallocate()
    }
}
