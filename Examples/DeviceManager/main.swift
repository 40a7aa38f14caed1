import BleCore
import BleDBus
import BleSim
import ExampleSupport
import Foundation
import FXBlueToothReadme

// FXBlueTooth's README manager as a program: the README's BlueToothManager runs unchanged (in
// Examples/FXBlueToothReadme); this file only drives it and checks what it printed.
let usage = """
usage: DeviceManager [--sim [--sim-fault no-multi-packet|no-device]] [--bus ADDRESS] [--adapter NAME] [--step-deadline SECONDS]
  Runs FXBlueTooth's README manager: scan for FFE0 devices named MyDevice*, connect, a single-packet
  (AA), a multi-packet (BB, 3 packets) and a streaming (CC) command, a link loss (with --sim BleSim
  drops it; on a real device switch it off and on), the README's automatic reconnect, and a command
  after it. Ends with a verdict line; exit status 1 when a step failed.
  --sim-fault  break the simulated device on purpose: no-multi-packet (it never answers BB),
               no-device (nothing named MyDevice*), to see the example fail loudly
"""
let rawArguments = Array(CommandLine.arguments.dropFirst())
func value(after option: String) -> String? {
    guard let index = rawArguments.firstIndex(of: option), index + 1 < rawArguments.count else { return nil }
    return rawArguments[index + 1]
}
let fault = value(after: "--sim-fault") ?? ""
let session = await ExampleSession.start("DeviceManager", scenario: DeviceManagerScenario.json(fault: fault), usage: usage)
let stepDeadline = Double(value(after: "--step-deadline") ?? "") ?? 20
let log = StepLog("DeviceManager", steps: ["crowded room", "scan and filter", "connect", "single-packet command", "multi-packet command",
                                           "streaming command", "link loss", "automatic reconnect", "command after the reconnect"])

// The README's `BleManager()` takes no options: the defaults point it at the chosen bus and adapter.
var defaults = session.options
defaults.connectTimeout = .seconds(10)
CentralManagerOptions.defaults = defaults
let transcript = readmeTranscript
let manager = ReadmeDeviceManager()

func waitFor(_ prefix: String, count: Int = 1) async -> Bool {
    await transcript.wait(seconds: stepDeadline, count: count, startingWith: prefix)
}

func run() async {
    // A crowded room: how many devices a plain scan hears, and which one is ours.
    let scout = RoomScout()
    guard let (identifier, heard) = await scout.find(options: session.options, seconds: stepDeadline) else {
        log.step("crowded room", passed: false, "no device named MyDevice* advertising FFE0 within \(Int(stepDeadline)) s")
        return
    }
    log.step("crowded room", passed: true, "heard \(heard) devices; MyDevice* is \(identifier)")

    manager.startScan()
    // The README prints the count line, then one line per device: wait for ours.
    let listed = await waitFor("  - ")
    let kept = transcript.lines.filter { $0.hasPrefix("  - ") }
    let onlyOurs = !kept.isEmpty && kept.allSatisfy { $0.hasPrefix("  - MyDevice") }
    log.step("scan and filter", passed: listed && onlyOurs, listed ? "the README's filter kept \(kept.map { $0.dropFirst(4) }.joined(separator: "; "))" : "the README's scan listed nothing")
    guard listed && onlyOurs else { return }

    manager.connect(uuid: identifier)
    let connected = await waitFor("连接成功：")
    let ready = connected ? await waitFor("特征值就绪") : false
    log.step("connect", passed: connected && ready, connected ? (ready ? "connected; FFE1/FFE2 ready" : "connected, characteristics never ready") : "never connected")
    guard connected && ready else { return }

    // The README sends QueryStatus by itself once the characteristics are ready.
    let single = await waitFor("QueryStatus 响应：")
    log.step("single-packet command", passed: single, single ? last("QueryStatus 响应：") : "no answer to AA 01 00 FF")

    manager.sendLongData()
    let multi = await waitFor("LongData 收到 3 包")
    log.step("multi-packet command", passed: multi, multi ? "BB 02 00 FF → 3 packets reassembled" : "no 3-packet answer to BB 02 00 FF within \(Int(stepDeadline)) s")

    let before = transcript.count(startingWith: "Notify 推送：")
    manager.startNotify()
    let streamed = await waitFor("Notify 推送：", count: before + 3)
    log.step("streaming command", passed: streamed, streamed ? "3 pushes, the last \(last("Notify 推送："))" : "fewer than 3 pushes after CC 03 00 FF")

    if let simulator = session.simulator {
        await dropLink(simulator)
        log.note("BleSim dropped the link to MyDevice-01")
    } else {
        log.note("switch MyDevice off and on again to see the link loss and the reconnect")
    }
    let lost = await waitFor("断开连接：")
    log.step("link loss", passed: lost, lost ? last("断开连接：") : "the README's disconnect handler never ran")
    guard lost else { return }
    let reconnected = await waitFor("连接成功：", count: 2)
    log.step("automatic reconnect", passed: reconnected, reconnected ? "the README's handler reconnected by itself" : "no reconnect within \(Int(stepDeadline)) s")
    guard reconnected else { return }
    let queries = transcript.count(startingWith: "QueryStatus 响应：")
    manager.sendQueryStatus()
    let after = await waitFor("QueryStatus 响应：", count: queries + 1)
    log.step("command after the reconnect", passed: after, after ? last("QueryStatus 响应：") : "no answer after the reconnect")
}

func last(_ prefix: String) -> String {
    transcript.lines.last { $0.hasPrefix(prefix) } ?? ""
}

func dropLink(_ simulator: Simulator) async {
    await simulator.peripheral(DeviceManagerScenario.address)?.dropLinks()
}

await run()
// BleSim stops first: the README's handler would otherwise reconnect while we exit, after the verdict.
await session.stop()
exit(log.finish())
