import BleDBus
import Foundation

/// What a call from bluetoothd on a served characteristic or descriptor must be before any of
/// it reaches the app: its options well typed, and an access the attribute allows. bluetoothd
/// checks the flags itself and never asks an app to read what is not readable, so such a call
/// comes from something else (anyone who owns `org.bluez`); it is answered as bluetoothd
/// answers a central: Read/Write Not Permitted.
package enum RequestAdmission {
    /// The access asked for.
    package enum Access: Equatable, Sendable {
        /// `ReadValue`.
        case read
        /// `WriteValue` with these bytes.
        case write(Data)
        /// `AcquireWrite`.
        case acquireWrite
        /// `AcquireNotify`.
        case acquireNotify
    }

    /// A call let in: what it asks and its options.
    package struct Admitted: Equatable, Sendable {
        /// The access.
        package var access: Access
        /// Its options, checked.
        package var options: RequestOptions
    }

    /// The D-Bus error a refused call gets.
    package struct Refusal: Error, Equatable, Sendable {
        /// `org.bluez.Error.*`.
        package var name: String
        /// Its message (bluetoothd's wording).
        package var message: String
        /// What was wrong, for the log.
        package var detail: String
    }

    /// Checks a call of `member` with `arguments` on an attribute that can (or cannot) be read
    /// and written. Nil for a member that is not one of the four.
    package static func admit(_ member: String, _ arguments: [DBusValue], canRead: Bool, canWrite: Bool) -> Result<Admitted, Refusal>? {
        typealias Method = BlueZ.GattCharacteristic1.Method
        func invalid(_ detail: String) -> Refusal {
            Refusal(name: BlueZ.ErrorName.invalidArguments, message: BlueZ.ErrorMessage.invalidArguments, detail: detail)
        }
        let access: Access
        let optionsArgument: DBusValue?
        switch member {
        case Method.readValue:
            access = .read
            optionsArgument = arguments.first
        case Method.writeValue:
            guard case .bytes(let value)? = arguments.first else { return .failure(invalid("the value is not ay")) }
            access = .write(value)
            optionsArgument = arguments.count > 1 ? arguments[1] : nil
        case Method.acquireWrite:
            access = .acquireWrite
            optionsArgument = arguments.first
        case Method.acquireNotify:
            access = .acquireNotify
            optionsArgument = arguments.first
        default:
            return nil
        }
        let options: RequestOptions
        switch RequestOptions.parse(optionsArgument) {
        case .success(let parsed): options = parsed
        case .failure(let problem):
            return .failure(invalid(problem.description))
        }
        switch access {
        case .read where !canRead:
            return .failure(Refusal(name: BlueZ.ErrorName.notPermitted, message: BlueZ.ErrorMessage.readNotPermitted,
                                    detail: "the attribute has no read flag"))
        case .write where !canWrite:
            return .failure(Refusal(name: BlueZ.ErrorName.notPermitted, message: BlueZ.ErrorMessage.writeNotPermitted,
                                    detail: "the attribute has no write flag, or is static"))
        default:
            return .success(Admitted(access: access, options: options))
        }
    }
}
