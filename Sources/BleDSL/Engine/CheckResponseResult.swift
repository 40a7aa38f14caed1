import Foundation

/// What a command's `checkResponse` decides about the packets seen so far.
public enum CheckResponseResult {
    /// The response is complete: the completion gets `.success(data)` and the command ends.
    case success(data: [Data])
    /// The response is an error: the completion gets `.failure(error)` and the command ends.
    case failure(error: Error)
    /// Not complete yet: `data` becomes the buffer passed to the next `checkResponse` (append
    /// the new packet yourself), and the command's timeout starts again.
    case goon(data: [Data])
    /// Deliver `.success(data)` now and keep listening (a stream): the command stays subscribed
    /// until its token is cancelled or the link drops; the queue moves on meanwhile.
    case longConnection(data: [Data])
}
