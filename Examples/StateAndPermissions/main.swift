import BleCore
import BleSim
import ExampleSupport
import Foundation

// StateAndPermissions [--sim] [--watch SECONDS]: seed 002's state and permission handling.
let usage = """
usage: StateAndPermissions [--sim] [--watch SECONDS] [--bus ADDRESS] [--adapter NAME]
  Reports the Bluetooth state and tells the user what to do about it, for every state.
  With --sim it walks BleSim's adapter through every state: on, powered off, on again, no
  adapter, adapter back, bluetoothd gone and back, and a user the D-Bus policy refuses.
  Against the real adapter it reports the state and follows changes for --watch seconds (10).
"""
let scenario = #"{"adapters": [{"name": "hci0", "address": "00:AA:01:00:00:00"}], "peripherals": []}"#
let session = await ExampleSession.start("StateAndPermissions", scenario: scenario, usage: usage)
let advisor = StateAdvisor()
let status: Int32
if let simulator = session.simulator, let bus = session.bus {
    status = await SimulatedStateTour(advisor: advisor, simulator: simulator, bus: bus, options: session.options).run()
} else {
    var seconds = 10.0
    if let index = session.arguments.firstIndex(of: "--watch"), index + 1 < session.arguments.count { seconds = Double(session.arguments[index + 1]) ?? 10 }
    status = await advisor.watch(options: session.options, seconds: seconds)
}
await session.stop()
exit(status)
