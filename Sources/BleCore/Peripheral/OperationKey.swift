import BleDBus

/// The queue an operation waits in: the path of its characteristic or descriptor, hashed once.
///
/// Operations on one attribute run one at a time, so every operation is looked up in the
/// queues several times; hashing a 60-byte object path each time was a fifth of the queues'
/// cost. The attribute computes its key once; equality is still the path's, so a characteristic
/// rebuilt at the same path shares the queue of the one it replaces.
struct OperationKey: Hashable, Sendable {
    let path: ObjectPath
    private let pathHash: Int

    init(_ path: ObjectPath) {
        self.path = path
        pathHash = path.hashValue
    }

    static func == (lhs: OperationKey, rhs: OperationKey) -> Bool {
        lhs.pathHash == rhs.pathHash && lhs.path == rhs.path
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(pathHash)
    }
}
