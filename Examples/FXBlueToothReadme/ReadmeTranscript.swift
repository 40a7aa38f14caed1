import Foundation

/// What the README example printed, line by line, with deadline-bound waits for lines to appear.
/// Public for the test target; the README's own types stay internal (the test uses `@testable import`).
public final class ReadmeTranscript {
    private let lock = NSLock()
    private var collected: [String] = []
    private var waiters: [(id: Int, condition: ([String]) -> Bool, resume: (Bool) -> Void)] = []
    private var nextID = 0

    public var lines: [String] {
        lock.lock()
        defer { lock.unlock() }
        return collected
    }

    public func reset() {
        lock.lock()
        collected.removeAll()
        lock.unlock()
    }

    public func append(_ line: String) {
        lock.lock()
        collected.append(line)
        let lines = collected
        let ready = waiters.filter { $0.condition(lines) }
        waiters.removeAll { waiter in ready.contains { $0.id == waiter.id } }
        lock.unlock()
        for waiter in ready { waiter.resume(true) }
    }

    /// Waits until `condition` holds for the lines so far; false after `seconds`.
    public func wait(seconds: Double = 20, until condition: @escaping ([String]) -> Bool) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            lock.lock()
            if condition(collected) {
                lock.unlock()
                return continuation.resume(returning: true)
            }
            let id = nextID
            nextID += 1
            let once = NSLock()
            var resumed = false
            let resume: (Bool) -> Void = { value in
                once.lock()
                defer { once.unlock() }
                guard !resumed else { return }
                resumed = true
                continuation.resume(returning: value)
            }
            waiters.append((id, condition, resume))
            lock.unlock()
            // Strong: the transcript is the process-wide `readmeTranscript`. A weak reference
            // gave the global a side table that, once the weak references were gone, only the
            // object's encoded reference count pointed to: a false leak for LeakSanitizer.
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                self.lock.lock()
                self.waiters.removeAll { $0.id == id }
                self.lock.unlock()
                resume(false)
            }
        }
    }

    /// Waits until `count` lines (in total) start with `prefix`.
    public func wait(seconds: Double = 20, count: Int = 1, startingWith prefix: String) async -> Bool {
        await wait(seconds: seconds) { lines in lines.filter { $0.hasPrefix(prefix) }.count >= count }
    }

    public func count(startingWith prefix: String) -> Int { lines.filter { $0.hasPrefix(prefix) }.count }
}

/// Everything the example printed.
public let readmeTranscript = ReadmeTranscript()

/// The README's code prints its results; inside this module `print` also records them, so the
/// test reads what a user would see on the console without changing a line of the example.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    let line = items.map { "\($0)" }.joined(separator: separator)
    Swift.print(line, terminator: terminator)
    readmeTranscript.append(line)
}
