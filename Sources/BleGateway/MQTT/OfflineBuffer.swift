import Foundation

/// Messages published while the broker is unreachable, oldest first, bounded: a gateway that is
/// offline for an hour keeps the newest readings and counts what it had to drop, instead of
/// growing without limit.
struct OfflineBuffer {
    /// One message waiting for the broker.
    struct Message {
        var topic: String
        var payload: Data
        var qos: Int32
        var retain: Bool
        /// The owner's kind of message, handed back when it is confirmed.
        var tag: UInt8 = 0
    }

    private var storage: [Message] = []
    private var head = 0
    let capacity: Int
    /// Messages dropped because the buffer was full.
    private(set) var dropped = 0

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { storage.count - head }

    /// Adds `message`, dropping the oldest when full.
    mutating func append(_ message: Message) {
        guard capacity > 0 else {
            dropped += 1
            return
        }
        if count >= capacity {
            head += 1
            dropped += 1
        }
        storage.append(message)
        // Compacts now and then so the array does not grow with the dropped prefix.
        if head > 1024 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    /// Takes every message, oldest first.
    mutating func drain() -> [Message] {
        let messages = Array(storage[head...])
        storage.removeAll(keepingCapacity: true)
        head = 0
        return messages
    }
}
