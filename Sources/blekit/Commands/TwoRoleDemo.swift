import BleTestSupport
import Foundation

/// `blekit demo`'s first part: Examples/LEDControl's peripheral and central as two processes
/// on BleSim's two adapters, their transcripts interleaved line by line.
enum TwoRoleDemo {
    /// The built LEDControl next to this executable.
    static var executable: String? {
        let me = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        let path = me.deletingLastPathComponent().appendingPathComponent("LEDControl").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// True when both processes ended with a passing verdict.
    static func run(busAddress: String) async -> Bool {
        guard let executable else {
            FileHandle.standardError.write(Data("blekit demo: LEDControl is not built next to blekit; build it (`swift build --product LEDControl`, or `make demo`)\n".utf8))
            return false
        }
        do {
            let peripheral = try ChildProcess(arguments: [executable, "peripheral", "--bus", busAddress, "--adapter", "hci0", "--deadline", "30"], standardErrorPath: nil)
            // The central starts once the LED advertises, as a user would start the second app.
            var advertising = false
            while let line = await line(of: peripheral, timeout: 15) {
                say("peripheral", line)
                if line.contains("✓ advertising") { advertising = true; break }
                if line.contains("verdict:") { break }
            }
            guard advertising else {
                _ = peripheral.stop(with: SIGTERM)
                say("demo", "✗ the LED peripheral did not start advertising")
                return false
            }
            let central = try ChildProcess(arguments: [executable, "central", "--bus", busAddress, "--adapter", "hci1", "--deadline", "30"], standardErrorPath: nil)
            async let centralStatus = relay(central, "central   ")
            async let peripheralStatus = relay(peripheral, "peripheral")
            let (first, second) = await (centralStatus, peripheralStatus)
            return first == 0 && second == 0
        } catch {
            FileHandle.standardError.write(Data("blekit demo: could not start LEDControl: \(error)\n".utf8))
            return false
        }
    }

    private static let output = NSLock()

    private static func say(_ who: String, _ line: String) {
        output.lock()
        print("  \(who) | \(line)")
        fflush(nil)
        output.unlock()
    }

    private static func line(of child: ChildProcess, timeout: TimeInterval) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.readLine(timeout: timeout)) }
        }
    }

    /// Prints the child's lines as they come, then its exit status.
    private static func relay(_ child: ChildProcess, _ who: String) async -> Int32? {
        while let line = await line(of: child, timeout: 40) { say(who, line) }
        let status = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: 10).status) }
        }
        if status != 0 { say(who, "✗ exited with status \(status.map(String.init) ?? "none (killed)")") }
        return status
    }
}
