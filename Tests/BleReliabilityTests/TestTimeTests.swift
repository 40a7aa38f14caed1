import BleTestSupport
import Foundation
import Testing

/// The sanitizers' slower clock: only a scale of at least 1 is taken, and a scaled deadline is
/// the scale times the deadline.
struct TestTimeTests {
    @Test func onlyAFiniteScaleOfAtLeastOneIsTaken() {
        #expect(TestTime.parse(nil) == 1)
        #expect(TestTime.parse("") == 1)
        #expect(TestTime.parse("fast") == 1)
        #expect(TestTime.parse("0.5") == 1, "a scale below 1 would shorten deadlines")
        #expect(TestTime.parse("-4") == 1)
        #expect(TestTime.parse("inf") == 1)
        #expect(TestTime.parse("nan") == 1)
        #expect(TestTime.parse("1") == 1)
        #expect(TestTime.parse(" 4 ") == 4)
        #expect(TestTime.parse("2.5") == 2.5)
    }

    @Test func theScaleIsTheEnvironmentsAndDeadlinesAreMultipliedByIt() {
        #expect(TestTime.scale == TestTime.parse(ProcessInfo.processInfo.environment[TestTime.environmentVariable]))
        #expect(TestTime.scaled(.seconds(2)) == .seconds(2) * TestTime.scale)
        #expect(TestTime.scaled(2.0) == 2 * TestTime.scale)
        #expect(TestTime.scaled(.zero) == .zero)
        #expect(TestTime.minutes(1) == Int((TestTime.scale).rounded(.up)))
        #expect(TestTime.minutes(2) >= 2)
    }
}
