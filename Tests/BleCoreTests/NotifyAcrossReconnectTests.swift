@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// Issue 10: notifications across many link losses and reconnects, on both of BlueZ's paths.
/// Each cycle connects, discovers, turns notifications on as an iOS app does after every
/// reconnect (a BleKit that re-arms by itself must double nothing), lets the peripheral send
/// numbered notifications and a fence, and drops the link from the peripheral's side. Counted
/// over all cycles: notifications lost, doubled or out of order, notify sockets left open, and
/// match rules and connections left on the bus.
@Suite(.serialized, .timeLimit(.minutes(TestTime.minutes(2))))
@BleLoop
struct NotifyAcrossReconnectTests {
    static let cycles = 200
    static let perCycle: UInt8 = 5

    struct Tally: CustomStringConvertible {
        var lost = 0
        var doubled = 0
        var misordered = 0
        var isNotifyingWhileDown = 0
        var failedEnables = 0
        var firstProblem: String?
        var stoppedAfter: Int?

        var description: String {
            "lost \(lost), doubled \(doubled), out of order \(misordered), isNotifying true without a link \(isNotifyingWhileDown), "
                + "failed enables \(failedEnables); first problem: \(firstProblem ?? "none")"
                + (stoppedAfter.map { "; stopped after cycle \($0)" } ?? "")
        }

        mutating func note(_ problem: String) {
            if firstProblem == nil { firstProblem = problem }
        }
    }

    @Test(arguments: [false, true])
    func everyNotificationArrivesOnceAcrossTwoHundredReconnects(preferStartNotify: Bool) async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.discover()
        let virtual = try #require(bench.simulator.peripheral(Sample.address))
        var tally = Tally()
        var baseline: BusCounts?
        var suspects = Set<String>()
        var baselineSockets = Set<String>()

        for cycle in 0..<Self.cycles {
            try await bench.connect(peripheral)
            try await bench.resolve(peripheral)
            let notify = bench.characteristic(peripheral, Sample.notify)
            notify.prefersStartNotify = preferStartNotify
            let before = Set(ProcessSockets.seqpacket().keys)
            if !notify.isNotifying {
                let mark = bench.recorder.mark
                peripheral.setNotifyValue(true, for: notify)
                let event = try await bench.await("notify on, cycle \(cycle)", since: mark) {
                    if case .notifyState(let other, _, _) = $0 { return other === notify }
                    return false
                }
                if case .notifyState(_, true, nil) = event {} else {
                    tally.failedEnables += 1
                    tally.note("cycle \(cycle): enabling ended with \(event)")
                }
            } else {
                // Re-armed by BleKit: the app's request must not add a second subscription.
                peripheral.setNotifyValue(true, for: notify)
            }

            let mark = bench.recorder.mark
            let hi = UInt8(cycle >> 8), lo = UInt8(cycle & 0xff)
            let sent = (0..<Self.perCycle).map { Data([hi, lo, $0]) }
            let fence = Data([0xfe, hi, lo])
            for value in sent { virtual.notify(Sample.full("ff02"), value: value) }
            virtual.notify(Sample.full("ff02"), value: fence)
            do {
                try await bench.recorder.wait(since: mark, timeout: .seconds(2), "fence of cycle \(cycle)") {
                    if case .value(let characteristic, let data, nil) = $0 { return characteristic.uuid == Sample.notify && data == fence }
                    return false
                }
            } catch {
                tally.note("cycle \(cycle): the fence never arrived (isNotifying \(notify.isNotifying))")
            }
            let received = bench.recorder.events.dropFirst(mark).compactMap { event -> Data? in
                if case .value(let characteristic, let data, nil) = event, characteristic.uuid == Sample.notify { return data }
                return nil
            }
            let expected = sent + [fence]
            for value in expected {
                let copies = received.filter { $0 == value }.count
                if copies == 0 { tally.lost += 1; tally.note("cycle \(cycle): \(Array(value)) lost") }
                if copies > 1 { tally.doubled += copies - 1; tally.note("cycle \(cycle): \(Array(value)) arrived \(copies) times") }
            }
            let inOrder = received.filter { expected.contains($0) }
            if Array(inOrder.reduce(into: [Data]()) { if !$0.contains($1) { $0.append($1) } }) != expected.filter({ inOrder.contains($0) }) {
                tally.misordered += 1
                tally.note("cycle \(cycle): received \(received.map { Array($0) })")
            }
            // The notify sockets that appeared with this subscription.
            suspects.formUnion(Set(ProcessSockets.seqpacket().keys).subtracting(before))

            let down = bench.recorder.mark
            virtual.dropLinks()
            try await bench.await("disconnect, cycle \(cycle)", since: down) {
                if case .disconnected(let other, _) = $0 { return other === peripheral }
                return false
            }
            if notify.isNotifying {
                tally.isNotifyingWhileDown += 1
                tally.note("cycle \(cycle): isNotifying true after the link went down")
            }
            // Three dead cycles tell the story; waiting out 200 fences would only cost time.
            if tally.lost >= 3 * expected.count {
                tally.stoppedAfter = cycle
                break
            }
            if cycle == 0 {
                // After one full cycle everything lazily created exists: the baseline.
                baseline = try await BusCounts.read(bench.fixture.client)
                baselineSockets = Set(ProcessSockets.seqpacket().keys)
            }
        }

        let end = try await BusCounts.read(bench.fixture.client)
        let leakedSockets = await ProcessSockets.stillLeaked(ProcessSockets.leaked(among: suspects.subtracting(baselineSockets)))
        #expect(tally.lost == 0 && tally.doubled == 0 && tally.misordered == 0 && tally.isNotifyingWhileDown == 0
                && tally.failedEnables == 0, "\(preferStartNotify ? "StartNotify" : "AcquireNotify"), \(Self.cycles) cycles: \(tally)")
        if !preferStartNotify {
            // The measurement sees AcquireNotify's sockets at all (else the next check proves nothing).
            #expect(!suspects.isEmpty, "no SEQPACKET socket appeared while AcquireNotify subscriptions were on")
        }
        #expect(leakedSockets.isEmpty, "\(leakedSockets.count) notify sockets still open after their links went down: \(leakedSockets.sorted())")
        let start = try #require(baseline)
        #expect(end.matchRules == start.matchRules, "match rules on the bus: \(start.matchRules) after the first cycle, \(end.matchRules) after \(Self.cycles)")
        #expect(end.connections == start.connections, "connections on the bus: \(start.connections) after the first cycle, \(end.connections) after \(Self.cycles)")
    }
}

/// The leak measure itself: it must see a socket whose other end closed, and not a live pair.
struct ProcessSocketsTests {
    @Test func aSocketWhoseOtherEndClosedIsALeakAndALivePairIsNot() throws {
        var ends: [Int32] = [0, 0]
        // Close-on-exec: a child another test spawns meanwhile would otherwise keep a copy of the
        // peer open, and its close would hang nothing up.
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        defer { close(ends[0]) }
        let inodes = Set(ProcessSockets.seqpacket().filter { ends.contains($0.value) }.keys)
        #expect(inodes.count == 2)
        #expect(ProcessSockets.leaked(among: inodes).isEmpty)
        close(ends[1])
        // The hang-up is an event, waited for with a deadline: a child that another test is
        // spawning holds a copy of the peer until its exec closes it.
        var entry = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        #expect(poll(&entry, 1, 10_000) == 1 && entry.revents & Int16(POLLHUP) != 0, "no hang-up within 10 s of closing the peer")
        #expect(ProcessSockets.leaked(among: inodes).count == 1)
    }
}

/// The private bus's own counts (its dbus-daemon has the Debug.Stats interface): only this
/// test's connections are on it, so they are exact whatever else runs in the process.
struct BusCounts {
    var matchRules: UInt32
    var connections: UInt32

    @BleLoop
    static func read(_ connection: Connection) async throws -> BusCounts {
        let reply = try await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                              interface: "org.freedesktop.DBus.Debug.Stats", member: "GetStats")
        let stats = try BlueZShapes.propertyMap(try #require(reply.first))
        guard case .uint32(let rules)? = stats["MatchRules"], case .uint32(let connections)? = stats["ActiveConnections"] else {
            throw BusCountsMissing(stats: "\(stats)")
        }
        return BusCounts(matchRules: rules, connections: connections)
    }
}

struct BusCountsMissing: Error, CustomStringConvertible {
    var stats: String
    var description: String { "GetStats lacks MatchRules or ActiveConnections: \(stats)" }
}

/// The SEQPACKET sockets this process holds (the kind BlueZ hands out for AcquireNotify and
/// AcquireWrite), by inode. Other tests running alongside open and close their own, so a leak
/// is told apart by what it is: a socket that appeared while one of this test's subscriptions
/// was being set up, is still open at the end, and whose other end is closed (the simulator
/// closes its end when the link goes). Another test's live socket has a live other end.
enum ProcessSockets {
    /// Inode → descriptor of every SEQPACKET socket this process holds. The type comes from
    /// each descriptor itself (SO_TYPE), not from /proc/net/unix, which can skip entries while
    /// other tests open and close sockets as it is read.
    static func seqpacket() -> [String: Int32] {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var held: [String: Int32] = [:]
        for descriptor in descriptors {
            guard let number = Int32(descriptor),
                  let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"),
                  target.hasPrefix("socket:[") else { continue }
            var type: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(number, SOL_SOCKET, SO_TYPE, &type, &length) == 0, type == Int32(SOCK_SEQPACKET.rawValue) else { continue }
            let inode = String(target.dropFirst("socket:[".count).dropLast())
            held[inode] = number
        }
        return held
    }

    /// Those of `leaked` that stay open and hung up for 2 s (at the tests' clock). Another
    /// test's socket can be caught between its peer's hang-up and its owner's close, which the
    /// shared loop may run a moment later under load (a full run flagged one in the StartNotify
    /// case, which opens no socket of its own); a leaked socket is still there after the grace.
    @BleLoop
    static func stillLeaked(_ leaked: [String]) async -> [String] {
        var remaining = leaked
        let end = ContinuousClock.now + TestTime.scaled(.seconds(2))
        while !remaining.isEmpty, ContinuousClock.now < end {
            var timer: LoopTimer?
            await withCheckedContinuation { continuation in
                timer = LoopTimer.scheduled(after: .milliseconds(50)) { continuation.resume() }
            }
            timer?.cancel()
            remaining = Self.leaked(among: Set(remaining))
        }
        return remaining
    }

    /// The sockets among `suspects` still open whose other end has hung up.
    static func leaked(among suspects: Set<String>) -> [String] {
        seqpacket().filter { suspects.contains($0.key) }.compactMap { inode, descriptor in
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 0) == 1, entry.revents & Int16(POLLHUP) != 0 else { return nil }
            return inode
        }.sorted()
    }
}
