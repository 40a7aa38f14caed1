import BleCore
import ExampleSupport
import Foundation

let usage = """
usage: LEDControl peripheral|central|--sim [--bus ADDRESS] [--adapter NAME] [--deadline SECONDS]
  peripheral  serve the LED (service FF10, state FF11: 00 off, 01 on) until a central switched it
              on and off and left (--forever: until Ctrl-C)
  central     find the LED, read it, subscribe, switch it on and off, check each notification
  --sim       both, in one process, against BleSim: the peripheral on hci0, the central on hci1
"""
let session = await ExampleSession.start("LEDControl", scenario: #"{"peripherals": []}"#, usage: usage)
var arguments = session.arguments
var deadline = 60.0
if let index = arguments.firstIndex(of: "--deadline"), index + 1 < arguments.count { deadline = Double(arguments[index + 1]) ?? 60 }
let role = arguments.first { !$0.hasPrefix("-") } ?? (session.isSimulated ? "both" : "")
let options = session.options
var status: Int32 = 0

func peripheralOptions(adapter: String?) -> PeripheralManagerOptions {
    PeripheralManagerOptions(bus: options.bus, adapter: adapter)
}

switch role {
case "peripheral":
    let peripheral = LEDPeripheral(once: !arguments.contains("--forever"))
    peripheral.start(options: peripheralOptions(adapter: options.adapter))
    if !(await peripheral.finished.wait(seconds: deadline)) { peripheral.log.note("gave up after \(Int(deadline)) s") }
    await MainActor.run { peripheral.stop() }
    status = peripheral.log.finish()
case "central":
    let central = LEDCentral()
    central.start(options: options)
    if !(await central.finished.wait(seconds: deadline)) { central.log.note("gave up after \(Int(deadline)) s") }
    await MainActor.run { central.stop() }
    status = central.log.finish()
case "both":
    let peripheral = LEDPeripheral(once: true)
    peripheral.start(options: peripheralOptions(adapter: "hci0"))
    var centralOptions = options
    centralOptions.adapter = "hci1"
    let central = LEDCentral()
    central.start(options: centralOptions)
    let centralDone = await central.finished.wait(seconds: deadline)
    let peripheralDone = await peripheral.finished.wait(seconds: 5)
    if !centralDone || !peripheralDone { central.log.note("gave up after \(Int(deadline)) s") }
    await MainActor.run {
        central.stop()
        peripheral.stop()
    }
    let first = central.log.finish()
    let second = peripheral.log.finish()
    status = first == 0 && second == 0 ? 0 : 1
default:
    FileHandle.standardError.write(Data("LEDControl: say peripheral, central or --sim\n\(usage)\n".utf8))
    status = 2
}
await session.stop()
exit(status)
