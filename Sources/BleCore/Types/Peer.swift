import Foundation

// @unchecked: a Sendable class must be final or have only NSObject above it, and CoreBluetooth's
// shape needs subclasses (`Central` and `Peripheral` are both peers). The one stored property is
// a `let` of a Sendable type; subclasses say why their own state is safe.
/// The other end of a link, as CoreBluetooth's `CBPeer`: a ``Peripheral`` this machine connects
/// to, or a ``Central`` connected to this machine.
public class Peer: @unchecked Sendable {
    /// Stable for this peer on this adapter across runs: a name-based UUID of the adapter's and
    /// the peer's addresses.
    public let identifier: UUID

    init(identifier: UUID) {
        self.identifier = identifier
    }
}
