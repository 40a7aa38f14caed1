import BleCore
@testable import BleGateway
import BleTestSupport
import Foundation
import Testing

@Suite(.serialized, .timeLimit(.minutes(TestTime.minutes(2))))
@BleLoop
struct MQTTClientTests {
    /// The broker dies: messages published meanwhile wait in the bounded buffer (the oldest
    /// dropped and counted), and go out after the client reconnects by itself.
    @Test func reconnectsAndFlushesTheBoundedOfflineBuffer() async throws {
        let broker = try await MosquittoBroker.start()
        let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: "buffered",
                                                         reconnectDelay: .milliseconds(100), maximumReconnectDelay: .milliseconds(200),
                                                         offlineBufferCapacity: 5))
        client.start()
        defer { client.close() }
        try await waitUntil("connected") { client.state == .connected }
        broker.stop()
        try await waitUntil("connection lost") { client.state != .connected }
        for index in 0..<8 { client.publish("buffer/\(index)", "m\(index)", qos: 1, retain: true) }
        #expect(client.bufferedMessages == 5)
        #expect(client.droppedMessages == 3)
        try await broker.restartInBackground()
        try await waitUntil("reconnected") { client.state == .connected && client.connections == 2 }
        #expect(client.bufferedMessages == 0)
        // Retained, so a subscriber that comes later sees what the flush delivered.
        let recorder = try MessageRecorder(port: broker.port, patterns: ["buffer/#"])
        defer { recorder.close() }
        try await recorder.wait("the five newest") { messages in Set(messages.map(\.topic)).count == 5 }
        #expect(Set(recorder.messages.map(\.topic)) == Set((3..<8).map { "buffer/\($0)" }))
    }

    /// QoS 1 messages count as published only once the broker acknowledged them: a burst whose
    /// broker is killed before it answers is not counted, libmosquitto sends it again after the
    /// reconnection, and the count then matches what the new broker holds (retained, one topic
    /// each), plus what the old one acknowledged before it died.
    @Test func qos1CountsOnlyAcknowledgedMessagesAcrossABrokerKill() async throws {
        let broker = try await MosquittoBroker.start()
        let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: "acked",
                                                         reconnectDelay: .milliseconds(100), maximumReconnectDelay: .milliseconds(200)))
        var tags: [UInt8] = []
        client.onPublished = { tags.append($0) }
        client.start()
        defer { client.close() }
        try await waitUntil("connected") { client.state == .connected }
        let count = 200
        for index in 0..<count { client.publish("burst/\(index)", "m\(index)", qos: 1, retain: true, tag: 7) }
        // Killed in the same loop turn: no acknowledgement has been read yet.
        #expect(client.publishedMessages == 0)
        #expect(client.unconfirmedMessages == count)
        broker.stop()
        try await waitUntil("connection lost") { client.state != .connected }
        let acknowledgedBeforeTheKill = client.publishedMessages
        try await broker.restartInBackground()
        try await waitUntil("every message acknowledged", timeout: .seconds(30)) { client.unconfirmedMessages == 0 && client.connections == 2 }
        #expect(client.publishedMessages == count)
        #expect(tags == Array(repeating: 7, count: count))
        let recorder = try MessageRecorder(port: broker.port, patterns: ["burst/#"])
        defer { recorder.close() }
        try await recorder.ready()
        let burst: ([MQTTClient.Message]) -> Set<String> = { Set($0.map(\.topic).filter { $0.hasPrefix("burst/") }) }
        try await recorder.wait("the resent messages") { burst($0).count >= count - acknowledgedBeforeTheKill }
        #expect(burst(recorder.messages).count == count - acknowledgedBeforeTheKill)
    }

    /// A burst of publishes is written under TCP_CORK, and the socket is uncorked once the loop
    /// has run the rest of what was ready: nothing is left waiting for the kernel's 200 ms flush.
    @Test func publishesAreCorkedForOneLoopTurnOnly() async throws {
        let broker = try await MosquittoBroker.start()
        let recorder = try MessageRecorder(port: broker.port, patterns: ["cork/#"])
        defer { recorder.close() }
        try await recorder.ready()
        let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: "corked"))
        client.start()
        defer { client.close() }
        try await waitUntil("connected") { client.state == .connected }
        for index in 0..<20 { client.publish("cork/\(index)", "m\(index)") }
        #expect(client.corked)
        #expect(Self.corkOption(client.watchedSocket) == 1)
        try await waitUntil("uncorked") { !client.corked }
        #expect(Self.corkOption(client.watchedSocket) == 0)
        try await recorder.wait("all twenty") { $0.filter { $0.topic.hasPrefix("cork/") }.count == 20 }
    }

    private static func corkOption(_ socket: Int32) -> Int32 {
        var value: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &value, &length) == 0 else { return -1 }
        return value
    }

    /// A connection that dies without DISCONNECT makes the broker publish the will.
    @Test func droppedConnectionPublishesTheWill() async throws {
        let broker = try await MosquittoBroker.start()
        let recorder = try MessageRecorder(port: broker.port, patterns: ["will/#"])
        defer { recorder.close() }
        try await recorder.ready()
        let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: broker.port, clientID: "mortal",
                                                         will: .init(topic: "will/mortal", payload: "offline")))
        client.start()
        try await waitUntil("connected") { client.state == .connected }
        client.publish("will/mortal", "online", qos: 1, retain: true)
        try await recorder.first("online") { $0.topic == "will/mortal" && $0.text == "online" }
        client.dropConnectionWithoutDisconnect()
        try await recorder.first("the will") { $0.topic == "will/mortal" && $0.text == "offline" }
        #expect(client.state == .closed)
    }

    /// A broker that refuses the credentials is reported, and retried with back-off, not crashed;
    /// TLS files that do not exist are refused at setup.
    @Test func refusedCredentialsAndMissingTLSFilesAreReported() async throws {
        do {
            _ = try MQTTClient(options: MQTTOptions(clientID: "tls", tls: .init(caFile: "/nonexistent/ca.pem")))
            Issue.record("a missing CA file was accepted")
        } catch {
            #expect(error.description.contains("TLS"))
        }
        let port = try MosquittoBroker.freePort()
        let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: port, clientID: "nobody", username: "user", password: "secret",
                                                         reconnectDelay: .milliseconds(50)))
        client.start()
        defer { client.close() }
        try await waitUntil("an error") { client.lastError != nil && client.state == .waitingToReconnect }
        let error = client.lastError ?? ""
        #expect(error.contains("\(port)") || error.lowercased().contains("refused"), "\(error)")
    }
}
