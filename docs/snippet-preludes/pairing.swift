// The Pairing article's context (compiled, never run): a central with a peripheral it found, and the app's UI.
import BleCore

let central = CentralManager(delegate: nil, queue: nil)
let peripheral = central.retrievePeripherals(withIdentifiers: [])[0]
func askUser(_ question: String) -> Bool { true }
func readDigits() -> UInt32 { 123456 }
func show(_ passkey: UInt32) {}
