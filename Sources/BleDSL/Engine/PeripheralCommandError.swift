import Foundation

/// Why a command of `DeviceCharacteristicValue` ended without a response.
public enum PeripheralCommandError: Error, Equatable, CustomStringConvertible, LocalizedError {
    /// The write or read characteristic (or the peripheral) is not known yet.
    case characteristicsNotReady
    /// No complete response within the command's `timeOutInterval`.
    case timeout(seconds: TimeInterval)
    /// The link dropped while the command was queued or running.
    case disconnected
    /// The command (or the engine) was cancelled.
    case cancelled
    /// The length protocol returned `length` (zero or negative), which would never finish.
    case invalidChunkLength(Int)
    /// A write-without-response chunk is longer than the link carries (MTU − 3).
    case chunkTooLong(length: Int, maximum: Int)
    /// BlueZ refused a write.
    case writeFailed(BleError)
    /// The read characteristic reported an error instead of a value.
    case notificationFailed(BleError)
    /// Enabling notifications on the read characteristic failed.
    case subscribeFailed(BleError)
    /// A read command's GATT read failed.
    case readFailed(BleError)
    /// Discovery finished and the device lacks this attribute.
    case attributeNotFound(MissingAttribute)

    /// What happened and what to do.
    public var description: String {
        switch self {
        case .characteristicsNotReady:
            return "The write or read characteristic is not discovered yet; run commands from CharacteristicAdapter.readyForCommand."
        case .timeout(let seconds):
            return "No complete response within \(seconds) s; check checkResponse, or raise timeOutInterval."
        case .disconnected:
            return "The peripheral disconnected before the command finished."
        case .cancelled:
            return "The command was cancelled."
        case .invalidChunkLength(let length):
            return "The command's length protocol returned \(length); chunk lengths must be positive."
        case .chunkTooLong(let length, let maximum):
            return "A \(length)-byte write-without-response chunk exceeds the link's \(maximum) bytes (MTU − 3); use a smaller length protocol or write with response."
        case .writeFailed(let error):
            return "Writing the command failed: \(error)"
        case .notificationFailed(let error):
            return "The read characteristic reported an error: \(error)"
        case .subscribeFailed(let error):
            return "Enabling notifications on the read characteristic failed: \(error)"
        case .readFailed(let error):
            return "Reading failed: \(error)"
        case .attributeNotFound(let missing):
            return missing.description
        }
    }

    /// Compares by case (wrapped BleErrors by value).
    public static func == (lhs: PeripheralCommandError, rhs: PeripheralCommandError) -> Bool {
        lhs.description == rhs.description
    }

    /// `description`, for `error.localizedDescription`.
    public var errorDescription: String? { description }
}
