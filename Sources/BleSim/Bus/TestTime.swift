import Foundation

/// How much slower than normal the tests' clock runs: the one place the suite's deadlines are
/// scaled for code that runs several times slower than a normal debug build (ThreadSanitizer,
/// AddressSanitizer).
///
/// The scale is read once from the environment variable `BLEKIT_TEST_TIME_SCALE` (a number of
/// at least 1; `make test-sanitizers` sets it). Unset, or not a number of at least 1, it is 1 and
/// nothing changes. A test waits with ``scaled(_:)-(Duration)`` for an outcome it expects within
/// a bound, and passes the library a scaled timeout only where it expects the operation to
/// succeed within it; a deadline the test expects to run out (the fault it checks) stays as it
/// is, or is scaled together with every duration it is compared with, so what a test checks is
/// the same at every scale, only the time it allows is longer.
public enum TestTime {
    /// The name of the environment variable that sets ``scale``.
    public static let environmentVariable = "BLEKIT_TEST_TIME_SCALE"

    /// The factor every scaled deadline is multiplied by (1 in a normal run).
    public static let scale: Double = parse(ProcessInfo.processInfo.environment[environmentVariable])

    /// The scale a value of the environment variable asks for: 1 unless it is a finite number of
    /// at least 1 (a scale below 1 would shorten deadlines, which only makes tests flaky).
    public static func parse(_ text: String?) -> Double {
        guard let text, let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 1 else { return 1 }
        return value
    }

    /// `duration` at the tests' clock: ``scale`` times as long.
    public static func scaled(_ duration: Duration) -> Duration {
        scale == 1 ? duration : duration * scale
    }

    /// `seconds` at the tests' clock: ``scale`` times as long.
    public static func scaled(_ seconds: TimeInterval) -> TimeInterval {
        seconds * scale
    }

    /// A whole number of minutes at the tests' clock, rounded up: for Swift Testing's
    /// `.timeLimit(.minutes(_:))`, the guard against a hung test, which counts in minutes.
    public static func minutes(_ minutes: Int) -> Int {
        Int((Double(minutes) * scale).rounded(.up))
    }
}
