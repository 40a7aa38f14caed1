// A Swift 6 command-line BLE program: copy this folder to start your own (see docs/PORTING.md).
//
//     swift run BleKitAppTemplate "MyDevice-01" [seconds]
//
// Exits 0 after printing the device's GATT tree, 1 when a step failed, 2 on timeout.
import BleCore
import Foundation

let name = CommandLine.arguments.dropFirst().first ?? "MyDevice-01"
/// Alive for the whole run (the manager holds its delegate weakly, as CoreBluetooth does).
var explorer: GattExplorer?

let seconds = CommandLine.arguments.dropFirst(2).first.flatMap(Int.init) ?? 30

BleProgram.run(timeout: .seconds(seconds)) { finish in
    explorer = GattExplorer(name: name, finish: finish)
    explorer?.start()
}
