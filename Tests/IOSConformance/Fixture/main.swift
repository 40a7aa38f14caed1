import BleCore
import Foundation

// The conformance fixture: iOS-shaped code (Swift 5 mode, as apps are) run against BleSim by
// IOSConformanceTests. The shell around it is Linux's (iOS has an app delegate here): it points
// unchanged code at the bus and adapter the test gives, through the managers' defaults.
//
//     IOSConformance central|peripheral|seed000|seed001 --bus ADDRESS --adapter NAME

// The seeds print as iOS apps do; a pipe would hold their lines until exit.
setvbuf(stdout, nil, _IOLBF, 0)
let arguments = CommandLine.arguments
func value(after option: String) -> String? {
    guard let index = arguments.firstIndex(of: option), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
guard arguments.count >= 2, let bus = value(after: "--bus"), let adapter = value(after: "--adapter") else {
    FileHandle.standardError.write(Data("usage: IOSConformance central|peripheral|seed000|seed001 --bus ADDRESS --adapter NAME\n".utf8))
    exit(2)
}
var central = CentralManagerOptions.defaults
central.bus = .address(bus)
central.adapter = adapter
central.connectTimeout = .seconds(10)
central.connectRetries = 1
central.retryBackoff = .milliseconds(100)
CentralManagerOptions.defaults = central
var peripheral = PeripheralManagerOptions.defaults
peripheral.bus = .address(bus)
peripheral.adapter = adapter
if arguments[1] == "peripheral" {
    // The flow's notifications go through the bus with room for one: updateValue reports a
    // full queue at once, so peripheralManagerIsReady(toUpdateSubscribers:) is due.
    peripheral.acquireSockets = false
    peripheral.notificationWindow = 1
}
PeripheralManagerOptions.defaults = peripheral

var running: AnyObject?
switch arguments[1] {
case "central":
    let flow = CentralFlow()
    running = flow
    flow.start()
case "peripheral":
    let flow = PeripheralFlow()
    running = flow
    flow.start()
case "seed001":
    let seed = PeripheralManager()
    running = seed
    // The seed's UI calls sendMessage; here each line on standard input does.
    Thread.detachNewThread {
        while let line = readLine() { DispatchQueue.main.async { seed.sendMessage(line) } }
        exit(0)
    }
case "seed000":
    let seed = LEDPeripheralViewController()
    running = seed
    seed.viewDidLoad()
default:
    FileHandle.standardError.write(Data("IOSConformance: unknown mode \(arguments[1])\n".utf8))
    exit(2)
}
dispatchMain()
