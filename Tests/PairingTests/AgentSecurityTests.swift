@testable import BleCore
import BleDBus
@testable import BleSim
import BleTestSupport
import Foundation
import Testing

/// Issue 12 item 7, the agent's part: only org.bluez's owner may drive it, and it comes back by
/// itself after bluetoothd restarts.
@BleLoop
struct AgentSecurityTests {
    @Test func aCallFromAnotherProcessIsNotAuthorizedAndChangesNothing() async throws {
        let bench = try await PairingBench.start()
        defer { bench.tearDown() }
        let agent = try await bench.centralAgent(.displayYesNo) { $0.accept() }
        guard let unique = bench.central.dbusConnection?.uniqueName else {
            Issue.record("the central has no connection")
            return
        }
        let mark = bench.recorder.mark
        for arguments in [["org.bluez.Agent1.RequestConfirmation", "objpath:/org/bluez/hci1/dev_C0_FF_EE_00_00_01", "uint32:123456"],
                          ["org.bluez.Agent1.RequestAuthorization", "objpath:/org/bluez/hci1/dev_C0_FF_EE_00_00_01"],
                          ["org.bluez.Agent1.Release"], ["org.bluez.Agent1.Cancel"]] {
            let result = try await dbusSend(bus: bench.busAddress, destination: unique, path: agent.objectPath, arguments)
            #expect(result.status != 0)
            #expect(result.errorText.contains("org.bluez.Error.NotAuthorized"), "\(arguments[0]): \(result.errorText)")
        }
        #expect(bench.recorder.events.dropFirst(mark).isEmpty, "no request reached the delegate: \(bench.recorder.events)")
        #expect(agent.isRegistered, "a forged Release did not unregister it")
    }

    @Test(arguments: [Simulator.StopMode.clean, .kill])
    func theAgentRegistersAgainAfterBluetoothdRestarts(mode: Simulator.StopMode) async throws {
        let bench = try await PairingBench.start([PairingAgentTests.spec()])
        defer { bench.tearDown() }
        let agent = try await bench.centralAgent(.displayYesNo) { $0.accept() }
        let mark = bench.recorder.mark
        bench.simulator.stop(mode)
        // The agent hears bluetoothd go (Release on a clean stop, the name's loss on SIGKILL);
        // only then is the name free for the new daemon.
        try await bench.recorder.wait(since: mark, "the agent released") { if case .released = $0 { return true }; return false }
        #expect(!agent.isRegistered)
        try await bench.simulator.start(on: bench.fixture.bus.busAddress)
        bench.simulator.setPairing(PeerPairing(capability: "DisplayYesNo"), for: PairingAgentTests.address)
        try await bench.recorder.waitRegistered("central", since: mark)
        #expect(agent.isRegistered)
        #expect(bench.simulator.agents.agents.count == 1)
        // The new daemon asks it.
        try await bench.recorder.wait(since: mark, "poweredOn again") { if case .state(.poweredOn) = $0 { return true }; return false }
        let peripheral = try await bench.discover(PairingAgentTests.address)
        let before = bench.recorder.mark
        #expect(try await bench.pair(peripheral) == nil)
        #expect(bench.recorder.requests("central", since: before).count == 1)
    }

    @Test func stopUnregistersTheAgent() async throws {
        let bench = try await PairingBench.start()
        defer { bench.tearDown() }
        let agent = try await bench.centralAgent(.displayYesNo) { $0.accept() }
        let mark = bench.fixture.mark
        agent.stop()
        try await bench.fixture.waitForProperty("/org/bluez/hci1", "Pairable", .boolean(false), since: mark)
        #expect(!agent.isRegistered)
        #expect(bench.simulator.agents.agents.isEmpty)
    }
}

struct DBusSendResult {
    var status: Int32
    var output: String
    var errorText: String
}

/// Runs `dbus-send` as a separate process (a sender that is not org.bluez).
///
/// Through `ChildProcess` (posix_spawn), not Foundation's `Process`, whose `run()` crashed in
/// `memcpy` while other tests spawned children at the same time. The blocking wait runs on its
/// own thread, not on the tests' cooperative pool.
func dbusSend(bus: String, destination: String, path: String, _ arguments: [String]) async throws -> DBusSendResult {
    let errorPath = NSTemporaryDirectory() + "dbus-send-\(UUID().uuidString).err"
    defer { unlink(errorPath) }
    let child = try ChildProcess(arguments: ["/usr/bin/dbus-send", "--bus=\(bus)", "--print-reply", "--reply-timeout=5000",
                                             "--dest=\(destination)", path] + arguments,
                                 standardErrorPath: errorPath)
    let (status, output) = await withCheckedContinuation { (continuation: CheckedContinuation<(Int32?, String), Never>) in
        Thread.detachNewThread {
            let finished = child.runToCompletion(timeout: 20)
            continuation.resume(returning: (finished.status, finished.output))
        }
    }
    let errorText = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    return DBusSendResult(status: status ?? -1, output: output, errorText: errorText)
}
