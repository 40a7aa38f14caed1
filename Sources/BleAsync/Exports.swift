// Code written for FXBlueToothAsync imports it and CoreBluetooth; `import BleAsync` replaces both:
// BleCore brings the CoreBluetooth spellings (CBUUID, CBPeripheral…), BleDSL the command protocol
// that `AsyncPeripheral.execute` runs.
@_exported import BleCore
@_exported import BleDSL
