import Foundation

/// One command's life inside the engine, as an explicit state machine: every command ends
/// exactly once (success, failure, timeout, cancel or disconnect), and a finished command never
/// sees another packet.
enum CommandState {
    /// Waiting behind the running command.
    case queued
    /// Chunks being written; packets may already be arriving (`buffer`).
    case writing(chunks: [Data], next: Int, awaitingAck: Bool, buffer: [Data])
    /// All written; collecting the response.
    case awaitingResponse(buffer: [Data])
    /// Delivered with `.longConnection`; keeps listening until cancelled or disconnected.
    case streaming(buffer: [Data])
    /// Ended; nothing more happens.
    case finished

    var buffer: [Data] {
        switch self {
        case .writing(_, _, _, let buffer), .awaitingResponse(let buffer), .streaming(let buffer): return buffer
        case .queued, .finished: return []
        }
    }

    var isActive: Bool {
        switch self {
        case .writing, .awaitingResponse: return true
        default: return false
        }
    }
}

/// What the engine should do after a command consumed an event.
enum CommandEffect {
    /// Write this chunk with this type.
    case write(Data)
    /// Deliver to the completion and end the command.
    case finish(Result<[Data], Error>)
    /// Deliver to the completion and keep the command as a stream.
    case deliver([Data])
    /// Restart the timeout.
    case restartTimer
}
