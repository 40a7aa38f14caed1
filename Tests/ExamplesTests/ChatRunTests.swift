import Foundation
import Testing

/// Examples/Chat against BleSim: two processes find each other by switching roles, chat both
/// ways (a long message split and reassembled, a lost packet resent), lose the link to a
/// heartbeat, relink by themselves and chat again; without the resend the run fails.
@Suite(.serialized) struct ChatRunTests {
    @Test func twoProcessesChatLoseTheLinkAndRelink() async throws {
        let (status, output) = try await ExampleRunTests.run("Chat", ["--sim", "--deadline", "60"])
        for peer in ["alice", "bob"] {
            let lines = output.split(separator: "\n").filter { $0.hasPrefix(peer) }.joined(separator: "\n")
            for expected in ["✓ powered on", "✓ linked: as the ", "💬 hi, this is ", "✓ received: a ", "packets",
                             "✓ sent: both messages acknowledged", "✓ lost packet resent: ", "✓ link lost: ",
                             "✓ relinked: as the ", "✓ after reconnect: got \"", "is back after the reconnect",
                             "verdict: Chat \(peer) passed: 8 of 8 steps"] {
                #expect(lines.contains(expected), "\(peer) missing \(expected)\n\(output)")
            }
        }
        // One side acts as the central, the other as the peripheral.
        #expect(output.contains("✓ linked: as the central") && output.contains("✓ linked: as the peripheral"), "\(output)")
        // A message longer than the MTU went out in several packets and arrived whole.
        #expect(output.contains("4 packet(s), 1 resent)"), "\(output)")
        #expect(output.contains("✓ link lost: heartbeat: no frame for"), "\(output)")
        #expect(output.contains("verdict: Chat passed: alice and bob chatted"), "\(output)")
        #expect(status == 0, "\(output)")
    }

    @Test func withoutTheResendTheLongMessagesNeverArriveAndTheRunFails() async throws {
        let (status, output) = try await ExampleRunTests.run("Chat", ["--sim", "--no-resend", "--deadline", "6"])
        #expect(status == 1, "\(output)")
        #expect(output.contains("verdict: Chat alice FAILED (never ran: sent, received"), "\(output)")
        #expect(output.contains("verdict: Chat FAILED (failed: alice, bob)"), "\(output)")
    }

    @Test func aPeerAloneFindsNobodyAndFails() async throws {
        let (status, output) = try await ExampleRunTests.run("Chat", ["--sim", "--only", "bob", "--deadline", "3"])
        #expect(status == 1, "\(output)")
        #expect(output.contains("bob   | [") && output.contains("gave up after 3 s"), "\(output)")
        #expect(output.contains("verdict: Chat bob FAILED (never ran: linked"), "\(output)")
        #expect(output.contains("verdict: Chat FAILED (failed: bob; only 1 of 2 peers ran)"), "\(output)")
    }
}
