// FXBlueTooth code imports one module; BleDSL brings BleCore's CoreBluetooth-shaped types along.
@_exported import BleCore
