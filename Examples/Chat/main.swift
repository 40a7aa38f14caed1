import BleCore
import ExampleSupport
import Foundation

let usage = """
usage: Chat peer --name NAME [--freeze] [--no-resend] [--bus ADDRESS] [--adapter NAME] [--deadline SECONDS]
       Chat --sim [--only NAME] [--no-resend] [--deadline SECONDS]
  peer   one chat app: switches between advertising and scanning until it meets another peer,
         sends a short and a long (multi-packet) message, acknowledges and resends lost packets,
         notices a dead link by its heartbeat, relinks by itself and chats again.
         --freeze: go silent for 3 s after the first round (what makes the other side's heartbeat fire)
  --sim  BleSim with two adapters and two peer processes: alice on hci0 (with --freeze), bob on hci1
         --only NAME: start just one of them (it then finds nobody and fails)
  --no-resend  never resend a lost packet: the long message never arrives and the run fails
"""
let session = await ExampleSession.start("Chat", scenario: #"{"peripherals": []}"#, usage: usage)
let arguments = session.arguments
func value(after option: String) -> String? {
    guard let index = arguments.firstIndex(of: option), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let deadline = Double(value(after: "--deadline") ?? "") ?? 60
var settings = ChatLink.Settings()
settings.resend = !arguments.contains("--no-resend")
var status: Int32 = 0

if let bus = session.bus {
    // Two processes, as two phones would be: each peer is this program again, on its own adapter.
    let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    let only = value(after: "--only")
    var peers: [(name: String, process: Process)] = []
    for (name, adapter, extra) in [("alice", "hci0", ["--freeze"]), ("bob", "hci1", [])] where only == nil || only == name {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: me)
        process.arguments = ["peer", "--name", name, "--bus", bus.address, "--adapter", adapter, "--deadline", "\(deadline)"] + extra
            + (settings.resend ? [] : ["--no-resend"])
        do { try process.run() } catch {
            print("[Chat] could not start the \(name) process: \(error)")
            status = 1
            continue
        }
        peers.append((name, process))
    }
    let exited = Completion()
    let processes = peers.map(\.process)
    DispatchQueue.global().async {
        for process in processes { process.waitUntilExit() }
        exited.signal()
    }
    if !(await exited.wait(seconds: deadline + 15)) {
        print("[Chat] the peers did not finish within \(Int(deadline + 15)) s: stopping them")
        for peer in peers where peer.process.isRunning { peer.process.terminate() }
    }
    let failed = peers.filter { $0.process.isRunning || $0.process.terminationStatus != 0 }.map(\.name)
    if peers.count < 2 || !failed.isEmpty { status = 1 }
    let problems = (failed.isEmpty ? [] : ["failed: \(failed.joined(separator: ", "))"]) + (peers.count < 2 ? ["only \(peers.count) of 2 peers ran"] : [])
    print(status == 0 ? "verdict: Chat passed: alice and bob chatted, lost a packet, lost the link and relinked"
                      : "verdict: Chat FAILED (\(problems.joined(separator: "; ")))")
} else if arguments.first == "peer", let name = value(after: "--name") {
    let peer = ChatPeer(name: name, freeze: arguments.contains("--freeze"), settings: settings)
    peer.start(central: session.options, server: PeripheralManagerOptions(bus: session.options.bus, adapter: session.options.adapter))
    if !(await peer.finished.wait(seconds: deadline)) { peer.log.note("gave up after \(Int(deadline)) s") }
    await MainActor.run { peer.stop() }
    status = peer.log.finish()
} else {
    FileHandle.standardError.write(Data("Chat: say peer --name NAME, or --sim\n\(usage)\n".utf8))
    status = 2
}
await session.stop()
exit(status)
