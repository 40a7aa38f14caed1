// The CoreBluetooth dictionary keys iOS code passes and reads, so it ports by changing its
// imports. A key BleKit honours exists with CoreBluetooth's meaning (and string value); a key
// whose feature Linux does not have is unavailable, and the compiler's message says what to use
// instead: a key that compiled and was then ignored would be a silent near miss.
// (The advertisement keys and the allow-duplicates key live beside AdvertisementData.)

// MARK: Central manager init options

/// `CBCentralManagerOptionRestoreIdentifierKey`: any value turns on
/// `CentralManagerOptions.restoreConnectedPeripherals`; devices BlueZ already has connected
/// are handed to `willRestoreState` (Linux has no app relaunch, so the identifier itself is unused).
public let CBCentralManagerOptionRestoreIdentifierKey = "kCBInitOptionRestoreIdentifier"

/// `CBCentralManagerOptionShowPowerAlertKey`: Linux has no system power alert.
@available(*, unavailable, message: "Linux shows no power alert: set CentralManagerOptions.powerOnAdapter to power the adapter on, or tell the user from centralManagerDidUpdateState")
public let CBCentralManagerOptionShowPowerAlertKey = "kCBInitOptionShowPowerAlert"

// MARK: Scan options

/// `CBCentralManagerScanOptionSolicitedServiceUUIDsKey`: BlueZ does not export solicited services.
@available(*, unavailable, message: "BlueZ does not report solicited service UUIDs; scan with withServices: and filter in didDiscover")
public let CBCentralManagerScanOptionSolicitedServiceUUIDsKey = "kCBScanOptionSolicitedServiceUUIDs"

// MARK: Restored state

/// `CBCentralManagerRestoredStateScanServicesKey`: BleKit restores connections, not scans.
@available(*, unavailable, message: "BleKit restores connected peripherals only (CBCentralManagerRestoredStatePeripheralsKey); start the scan again at launch")
public let CBCentralManagerRestoredStateScanServicesKey = "kCBRestoredScanServices"

/// `CBCentralManagerRestoredStateScanOptionsKey`: BleKit restores connections, not scans.
@available(*, unavailable, message: "BleKit restores connected peripherals only (CBCentralManagerRestoredStatePeripheralsKey); start the scan again at launch")
public let CBCentralManagerRestoredStateScanOptionsKey = "kCBRestoredScanOptions"

// MARK: Connect options

/// `CBConnectPeripheralOptionNotifyOnConnectionKey`: an iOS background alert.
@available(*, unavailable, message: "Linux shows no connection alerts: react in centralManager(_:didConnect:)")
public let CBConnectPeripheralOptionNotifyOnConnectionKey = "kCBConnectOptionNotifyOnConnection"

/// `CBConnectPeripheralOptionNotifyOnDisconnectionKey`: an iOS background alert.
@available(*, unavailable, message: "Linux shows no connection alerts: react in centralManager(_:didDisconnectPeripheral:error:)")
public let CBConnectPeripheralOptionNotifyOnDisconnectionKey = "kCBConnectOptionNotifyOnDisconnection"

/// `CBConnectPeripheralOptionNotifyOnNotificationKey`: an iOS background alert.
@available(*, unavailable, message: "Linux shows no notification alerts: react in peripheral(_:didUpdateValueFor:error:)")
public let CBConnectPeripheralOptionNotifyOnNotificationKey = "kCBConnectOptionNotifyOnNotification"

/// `CBConnectPeripheralOptionStartDelayKey`: delays an iOS background alert.
@available(*, unavailable, message: "Linux shows no connection alerts; to connect later, call connect from a timer")
public let CBConnectPeripheralOptionStartDelayKey = "kCBConnectOptionStartDelay"

/// `CBConnectPeripheralOptionEnableAutoReconnect`: iOS 17 system reconnection.
@available(*, unavailable, message: "reconnect in centralManager(_:didDisconnectPeripheral:error:), or use BleDSL's BleManagerCommandItem.reconnect(_:)")
public let CBConnectPeripheralOptionEnableAutoReconnect = "kCBConnectOptionEnableAutoReconnect"

/// `CBConnectPeripheralOptionEnableTransportBridgingKey`: an iOS classic/LE bridging feature.
@available(*, unavailable, message: "BlueZ has no transport bridging; connect over LE (the default) or BR/EDR explicitly")
public let CBConnectPeripheralOptionEnableTransportBridgingKey = "kCBConnectOptionEnableTransportBridging"

/// `CBConnectPeripheralOptionRequiresANCS`: Apple Notification Center Service exists on iOS only.
@available(*, unavailable, message: "ANCS is an iOS service; Linux has no equivalent")
public let CBConnectPeripheralOptionRequiresANCS = "kCBConnectOptionRequiresANCS"

// MARK: Advertisement data keys BlueZ never fills

/// `CBAdvertisementDataOverflowServiceUUIDsKey`: iOS's background overflow area. BlueZ reports
/// every advertised UUID under `CBAdvertisementDataServiceUUIDsKey`, so this key is never present.
public let CBAdvertisementDataOverflowServiceUUIDsKey = "kCBAdvDataHashedServiceUUIDs"

/// `CBAdvertisementDataSolicitedServiceUUIDsKey`: BlueZ 5.66 does not export solicited
/// services, so this key is never present.
public let CBAdvertisementDataSolicitedServiceUUIDsKey = "kCBAdvDataSolicitedServiceUUIDs"

// MARK: Peripheral manager

/// `CBPeripheralManagerOptionShowPowerAlertKey`: Linux has no system power alert.
@available(*, unavailable, message: "Linux shows no power alert: watch peripheralManagerDidUpdateState and tell the user")
public let CBPeripheralManagerOptionShowPowerAlertKey = "kCBInitOptionShowPowerAlert"

/// `CBPeripheralManagerOptionRestoreIdentifierKey`: sets `PeripheralManagerOptions.restoreIdentifier`.
/// bluetoothd forgets a process's services and advertisements when the process ends, so a new
/// process restores nothing; what BleKit restores is the peripheral role across a bluetoothd
/// restart or the adapter's return, and with this key it says so in
/// `peripheralManager(_:willRestoreState:)` before the state turns `poweredOn` again.
public let CBPeripheralManagerOptionRestoreIdentifierKey = "kCBInitOptionRestoreIdentifier"

/// `CBPeripheralManagerRestoredStateServicesKey`: in `willRestoreState`, the `[CBMutableService]`
/// BleKit registers again with bluetoothd (do not add them again).
public let CBPeripheralManagerRestoredStateServicesKey = "kCBRestoredServices"

/// `CBPeripheralManagerRestoredStateAdvertisementDataKey`: in `willRestoreState`, the
/// `startAdvertising` data BleKit advertises again (`CBAdvertisementDataLocalNameKey`,
/// `CBAdvertisementDataServiceUUIDsKey`); absent when none was being advertised.
public let CBPeripheralManagerRestoredStateAdvertisementDataKey = "kCBRestoredAdvertisement"
