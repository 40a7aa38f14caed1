@testable import BleCore
import BleLogging
import Foundation
import Testing

/// A handler that keeps what it is given.
final class CapturingHandler: LogHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [(Logger.Level, String, Logger.Metadata)] = []
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.MetadataValue? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
        lock.lock()
        stored.append((level, message.description, self.metadata.merging(metadata ?? [:]) { _, new in new }))
        lock.unlock()
    }

    var messages: [(Logger.Level, String, Logger.Metadata)] {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}

/// The Logger has swift-log's shape and BleKit's log goes through it.
@Suite(.serialized) struct LoggerTests {
    @Test func levelsFilterAndMetadataMerges() {
        let handler = CapturingHandler()
        var logger = Logger(label: "test", handler: handler)
        logger[metadataKey: "device"] = "C0:FF:EE:00:00:01"
        var built = false
        logger.debug("hidden \({ built = true; return "x" }())")
        #expect(!built, "a message below the level is never built")
        logger.info("connected", metadata: ["attempt": "1"])
        logger.error("failed")
        let messages = handler.messages
        #expect(messages.map(\.0) == [.info, .error])
        #expect(messages.first?.1 == "connected")
        #expect(messages.first?.2 == ["device": "C0:FF:EE:00:00:01", "attempt": "1"])
        logger.logLevel = .trace
        logger.trace("now shown")
        #expect(handler.messages.count == 3)
        #expect(Logger.Level.trace < Logger.Level.debug && Logger.Level.warning < Logger.Level.error && Logger.Level.error < Logger.Level.critical)
        #expect(Logger.MetadataValue.array(["a", "b"]).description == "[a, b]")
    }

    @Test func blekitLogValuesAreParsedAndAnInvalidOneIsRejected() {
        #expect(LoggingSystem.environmentLevel(["BLEKIT_LOG": "debug"]) == .debug)
        #expect(LoggingSystem.environmentLevel(["BLEKIT_LOG": "WARN"]) == .warning)
        #expect(LoggingSystem.environmentLevel(["BLEKIT_LOG": "trace"]) == .trace)
        #expect(LoggingSystem.environmentLevel([:]) == nil)
        #expect(LoggingSystem.environmentLevel(["BLEKIT_LOG": "verbose"]) == nil, "an invalid value leaves the default")
    }

    @Test func bleKitsLogGoesThroughABootstrappedHandler() {
        let handler = CapturingHandler()
        handler.logLevel = .trace
        LoggingSystem.bootstrap { _ in handler }
        defer { LoggingSystem.bootstrap { label in StandardErrorLogHandler(label: label) } }
        let previous = BleLog.level
        BleLog.level = .info
        defer { BleLog.level = previous }
        BleLog.info("state poweredOn")
        BleLog.debug("below the level")
        #expect(handler.messages.map(\.1) == ["state poweredOn"])
        #expect(handler.messages.first?.0 == .info)
        #expect(BleLog.logger.label == "BleKit")
    }
}
