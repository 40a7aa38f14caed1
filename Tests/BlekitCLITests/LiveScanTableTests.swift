import Foundation
import Testing

/// `blekit scan` on a terminal: a pseudo-terminal (python3's pty module) shows the table
/// drawn in place, sorted by RSSI, with the cursor hidden while it runs and shown at the end.
@Suite(.serialized) struct LiveScanTableTests {
    /// Runs argv[1:] in a pseudo-terminal of 120×30 and prints everything it wrote.
    static let ptyRunner = #"""
    import fcntl, os, pty, struct, sys, termios
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.argv[1], sys.argv[1:])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    sys.stdout.buffer.write(b"".join(chunks))
    sys.stdout.flush()
    sys.exit(os.waitstatus_to_exitcode(status))
    """#

    @Test func theTableIsRedrawnInPlaceSortedByRSSI() async throws {
        let room = try await SimulatedRoom.start(Rooms.heartRate)
        defer { Task { await room.stop() } }
        let blekit = try #require(CLIRun.executable)
        let run = try await CLIRun.run(["-c", Self.ptyRunner, blekit, "scan", "--count", "3", "--timeout", "30", "--bus", room.bus.address],
                                       executable: "/usr/bin/python3")
        #expect(run.status == 0, "\(run.transcript)")
        let screen = run.output
        #expect(screen.contains("\u{1B}[?25l"), "the cursor is hidden while the table is live")
        #expect(screen.hasSuffix("\u{1B}[?25h"), "and shown again at the end: \(screen.suffix(200).debugDescription)")
        let redraws = screen.components(separatedBy: "\u{1B}[J").count - 1
        #expect(redraws >= 2, "drawn, then redrawn in place: \(redraws)")
        #expect(screen.range(of: "\u{1B}\\[\\d+A", options: .regularExpression) != nil, "moves the cursor up over the last frame")
        // The last frame: the header, the column titles, and the rows strongest first.
        let lastFrame = try #require(screen.components(separatedBy: "\u{1B}[J").last)
        let lines = lastFrame.components(separatedBy: .newlines).filter { !$0.isEmpty }
        #expect(lines.first?.hasPrefix("Scan stopped after 3 device(s) — 3 device(s)") == true, "\(lines)")
        #expect(lines.dropFirst().first?.hasPrefix("NAME") == true, "\(lines)")
        let order = lines.compactMap { line in ["LED-Status", "HR-Strap", "Far-Away"].first { line.hasPrefix($0) } }
        #expect(order == ["LED-Status", "HR-Strap", "Far-Away"], "sorted by RSSI, strongest first: \(lines)")
        let led = try #require(lines.first { $0.hasPrefix("LED-Status") })
        #expect(led.contains("C0:FF:EE:00:00:01") && led.contains("█") && led.contains("Nordic Semiconductor ASA") && led.contains("FF00"), "\(led)")
        let heart = try #require(lines.first { $0.hasPrefix("HR-Strap") })
        #expect(heart.contains("Apple, Inc.") && heart.contains("Heart Rate"), "\(heart)")
        // While it runs, the header counts down.
        #expect(screen.contains("s left"), "a countdown while scanning")
    }
}
