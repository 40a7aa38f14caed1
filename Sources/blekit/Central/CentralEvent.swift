import BleCore
import Foundation

/// What the central's and peripherals' delegates heard, as one stream a command waits on.
enum CentralEvent: @unchecked Sendable {
    // @unchecked: Peripheral, Characteristic and Descriptor are BleKit's any-thread facades.
    case state(ManagerState)
    case discovered(Peripheral, AdvertisementData, rssi: Int)
    case connected(Peripheral)
    case failedToConnect(Peripheral, Error?)
    case disconnected(Peripheral, Error?)
    case scanFailed(Error)
    case servicesDiscovered(Peripheral, Error?)
    case characteristicsDiscovered(Service, Error?)
    case descriptorsDiscovered(Characteristic, Error?)
    case valueUpdated(Characteristic, Data?, Error?)
    case valueWritten(Characteristic, Error?)
    /// BleKit's own answer to one `writeValue`: with response the acknowledgement, without
    /// response nil once queued, or why nothing was sent (too long, not connected, gone).
    case writeAnswered(Characteristic, BleError?)
    case notificationState(Characteristic, Error?)
    case descriptorValueUpdated(Descriptor, Error?)
    case rssiRead(Peripheral, Int, Error?)
    /// The writes without response queued for this peripheral have all left BleKit.
    case readyToWriteWithoutResponse(Peripheral)
    case interrupted
}
