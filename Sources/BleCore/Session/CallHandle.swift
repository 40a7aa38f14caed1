import BleDBus

/// A BlueZ call in flight, to give up when what it was for ended another way (see
/// `Connection.abandonCall`). A value, not a closure: one allocation less per GATT operation.
@BleLoop
struct CallHandle {
    private weak var connection: Connection?
    private let id: UInt64

    init(connection: Connection, id: UInt64) {
        self.connection = connection
        self.id = id
    }

    /// Stops waiting for the reply: the call's completion runs with `.cancelled` now, unless it
    /// ended already.
    func abandon() {
        connection?.abandonCall(id)
    }
}
