import BleSim
import Foundation

/// `blekit demo`'s first part: Examples/LEDControl's peripheral and central as two processes
/// on BleSim's two adapters, their transcripts interleaved line by line.
enum TwoRoleDemo {
    /// True when both processes ended with a passing verdict.
    static func run(busAddress: String) async -> Bool {
        guard let executable = DemoPrograms.path(of: "LEDControl") else { return false }
        do {
            let peripheral = try ChildProcess(arguments: [executable, "peripheral", "--bus", busAddress, "--adapter", "hci0", "--deadline", "30"], standardErrorPath: nil)
            // The central starts once the LED advertises, as a user would start the second app.
            var advertising = false
            while let line = await DemoPrograms.line(of: peripheral, timeout: 15) {
                DemoPrograms.say("peripheral", line)
                if line.contains("✓ advertising") { advertising = true; break }
                if line.contains("verdict:") { break }
            }
            guard advertising else {
                _ = peripheral.stop(with: SIGTERM)
                DemoPrograms.say("demo", "✗ the LED peripheral did not start advertising")
                return false
            }
            let central = try ChildProcess(arguments: [executable, "central", "--bus", busAddress, "--adapter", "hci1", "--deadline", "30"], standardErrorPath: nil)
            async let centralStatus = DemoPrograms.relay(central, "central   ")
            async let peripheralStatus = DemoPrograms.relay(peripheral, "peripheral")
            let (first, second) = await (centralStatus, peripheralStatus)
            return first == 0 && second == 0
        } catch {
            FileHandle.standardError.write(Data("blekit demo: could not start LEDControl: \(error)\n".utf8))
            return false
        }
    }
}

/// The example programs `blekit demo` runs beside itself (built next to it), and their output.
enum DemoPrograms {
    /// The built example `name` next to this executable, or nil after saying how to build it.
    static func path(of name: String) -> String? {
        let me = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        let path = me.deletingLastPathComponent().appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
        FileHandle.standardError.write(Data("blekit demo: \(name) is not built next to blekit; build it (`swift build --product \(name)`, or `make demo`)\n".utf8))
        return nil
    }

    private static let output = NSLock()

    /// Prints `line` as `who`'s (or as it is, when `who` is nil), one whole line at a time.
    static func say(_ who: String?, _ line: String) {
        output.lock()
        print(who.map { "  \($0) | \(line)" } ?? line)
        fflush(nil)
        output.unlock()
    }

    static func line(of child: ChildProcess, timeout: TimeInterval) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.readLine(timeout: timeout)) }
        }
    }

    /// Prints the child's lines as they come (as `who`'s), then its exit status.
    static func relay(_ child: ChildProcess, _ who: String?) async -> Int32? {
        while let line = await line(of: child, timeout: 40) { say(who, line) }
        let status = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: 10).status) }
        }
        if status != 0 { say(who ?? "demo", "✗ exited with status \(status.map(String.init) ?? "none (killed)")") }
        return status
    }
}
