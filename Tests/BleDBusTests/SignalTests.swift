import BleDBus
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// Signal subscriptions: matching by path, namespace, interface, member and sender; ending them;
/// keeping the bus's match rules few; following the owner of a well-known name.
///
/// "Not delivered" is shown without waiting: a non-matching signal is emitted before a matching
/// one by the same sender, and the bus keeps one sender's messages in order, so a wrongly
/// delivered signal would arrive first.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct SignalTests {
    nonisolated static let interface = "com.example.Signals"

    /// Subscribes with `match` and waits until the bus has the rule.
    static func subscribe(_ connection: Connection, _ match: SignalMatch, name: String = "signal")
        async throws -> (SignalSubscription, Mailbox<DBusMessage>) {
        let received = Mailbox<DBusMessage>(name)
        let subscription = try connection.signals.subscribe(match) { received.post($0) }
        try await connection.syncWithBus()
        return (subscription, received)
    }

    static func emit(_ connection: Connection, path: ObjectPath = "/emitter", interface: String = SignalTests.interface,
                     member: String = "Changed", _ body: [DBusValue] = []) throws {
        try connection.emitSignal(path: path, interface: interface, member: member, body: body)
    }

    @Test func aSubscriptionByPathGetsOnlyThatPathsSignals() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (subscription, received) = try await Self.subscribe(client, SignalMatch(path: "/dev/a", interface: Self.interface))
        try Self.emit(server, path: "/dev/b")
        try Self.emit(server, path: "/dev/a/child")
        try Self.emit(server, path: "/dev/a", [.string("mine")])
        let message = try await received.next()
        #expect(message.path == "/dev/a")
        #expect(message.body == [.string("mine")])
        #expect(message.sender == server.uniqueName)
        withExtendedLifetime(subscription) {}
    }

    @Test func aSubscriptionByPathNamespaceGetsThePathAndEverythingBelowIt() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (subscription, received) = try await Self.subscribe(client, SignalMatch(pathNamespace: "/org/bluez/hci0"))
        for path: ObjectPath in ["/org/bluez", "/org/bluez/hci01", "/org/bluez/hci0", "/other",
                                 "/org/bluez/hci0/dev_1", "/org/bluez/hci0/dev_1/service0001"] {
            try Self.emit(server, path: path)
        }
        let paths = try await received.next(3).map(\.path)
        #expect(paths == ["/org/bluez/hci0", "/org/bluez/hci0/dev_1", "/org/bluez/hci0/dev_1/service0001"])
        withExtendedLifetime(subscription) {}
    }

    @Test func aSubscriptionByInterfaceGetsOnlyThatInterface() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (subscription, received) = try await Self.subscribe(client, SignalMatch(interface: "com.example.Wanted"))
        try Self.emit(server, interface: "com.example.Other")
        try Self.emit(server, interface: "com.example.Wanted")
        #expect(try await received.next().interface == "com.example.Wanted")
        withExtendedLifetime(subscription) {}
    }

    @Test func aSubscriptionByMemberGetsOnlyThatMember() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (subscription, received) = try await Self.subscribe(client, SignalMatch(interface: Self.interface, member: "Ping"))
        try Self.emit(server, member: "Pong")
        try Self.emit(server, member: "Ping")
        #expect(try await received.next().member == "Ping")
        withExtendedLifetime(subscription) {}
    }

    @Test func aSubscriptionByArg0GetsOnlySignalsWhoseFirstArgumentMatches() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (subscription, received) = try await Self.subscribe(client, SignalMatch(interface: Self.interface, arg0: "it's"))
        try Self.emit(server, [.string("other")])
        try Self.emit(server, [.uint32(1)])
        try Self.emit(server, [.string("it's"), .uint32(2)])
        #expect(try await received.next().body == [.string("it's"), .uint32(2)])
        withExtendedLifetime(subscription) {}
    }

    @Test func aSubscriptionByUniqueSenderIgnoresOtherSenders() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let stranger = try await Connection.open(bus.busAddress)
        let (subscription, received) = try await Self.subscribe(client, SignalMatch(sender: server.uniqueName, interface: Self.interface))
        try Self.emit(stranger, [.string("stranger")])
        // The bus has routed the stranger's signal before it answers the stranger's next call.
        try await stranger.syncWithBus()
        try Self.emit(server, [.string("server")])
        #expect(try await received.next().body == [.string("server")])
        withExtendedLifetime(subscription) {}
    }

    @Test func aSubscriptionByWellKnownSenderGetsOnlyTheCurrentOwnersSignals() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let stranger = try await Connection.open(bus.busAddress)
        try await server.claimName("com.example.Sender")
        let (byName, fromOwner) = try await Self.subscribe(client, SignalMatch(sender: "com.example.Sender", interface: Self.interface))
        // A second, sender-less subscription makes the bus deliver the stranger's signal to the
        // client too, so the router itself has to tell the senders apart.
        let (anyone, fromAnyone) = try await Self.subscribe(client, SignalMatch(interface: Self.interface))
        try Self.emit(stranger, [.string("stranger")])
        try await stranger.syncWithBus()
        try Self.emit(server, [.string("owner")])
        #expect(try await fromAnyone.next(2).map(\.body) == [[.string("stranger")], [.string("owner")]])
        #expect(fromOwner.pending.map(\.body) == [[.string("owner")]])
        withExtendedLifetime((byName, anyone)) {}
    }

    @Test func signalsArriveInTheOrderTheyWereEmitted() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (subscription, received) = try await Self.subscribe(client, SignalMatch(interface: Self.interface))
        for index in 0..<UInt32(500) { try Self.emit(server, [.uint32(index)]) }
        let bodies = try await received.next(500).map(\.body)
        #expect(bodies == (0..<UInt32(500)).map { [.uint32($0)] })
        withExtendedLifetime(subscription) {}
    }

    // MARK: Ending subscriptions

    @Test func cancellingASubscriptionStopsDelivery() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (subscription, cancelled) = try await Self.subscribe(client, SignalMatch(interface: Self.interface, member: "Gone"))
        let (sentinel, sentinels) = try await Self.subscribe(client, SignalMatch(interface: Self.interface, member: "Sentinel"))
        subscription.cancel()
        subscription.cancel()
        await loopTurn()
        try Self.emit(server, member: "Gone")
        try Self.emit(server, member: "Sentinel")
        _ = try await sentinels.next()
        #expect(cancelled.receivedCount == 0)
        withExtendedLifetime(sentinel) {}
    }

    @Test func releasingTheLastReferenceToASubscriptionStopsDelivery() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let released = Mailbox<DBusMessage>("released")
        var subscription: SignalSubscription? = try client.signals.subscribe(SignalMatch(interface: Self.interface, member: "Gone")) {
            released.post($0)
        }
        let (sentinel, sentinels) = try await Self.subscribe(client, SignalMatch(interface: Self.interface, member: "Sentinel"))
        // Delivered while the subscription lives.
        try Self.emit(server, member: "Gone")
        _ = try await released.next()
        #expect(subscription != nil)
        subscription = nil
        await loopTurn()
        try Self.emit(server, member: "Gone")
        try Self.emit(server, member: "Sentinel")
        _ = try await sentinels.next()
        #expect(released.receivedCount == 1)
        withExtendedLifetime(sentinel) {}
    }

    @Test func cancellingOnTheLoopStopsDeliveryAtOnceEvenForTheSignalBeingDelivered() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let later = LoopBox<SignalSubscription?>(nil)
        let laterCalls = LoopBox(0)
        let first = Mailbox<DBusMessage>("first")
        // Subscribed first, so its handler runs first for a signal both match: it cancels the other.
        let canceller = try client.signals.subscribe(SignalMatch(interface: Self.interface)) { message in
            later.value?.cancel()
            first.post(message)
        }
        later.value = try client.signals.subscribe(SignalMatch(interface: Self.interface)) { _ in laterCalls.value += 1 }
        try await client.syncWithBus()
        try Self.emit(server)
        _ = try await first.next()
        #expect(laterCalls.value == 0)
        withExtendedLifetime(canceller) {}
    }

    // MARK: Bus rules

    @Test func subscribeHasSentTheBusRuleWhenItReturns() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let sentRules = LoopBox<[String]>([])
        client.tracer = { direction, message in
            if direction == .sent, message.member == "AddMatch", case .string(let rule)? = message.body.first {
                sentRules.value.append(rule)
            }
        }
        let subscription = try client.signals.subscribe(SignalMatch(interface: Self.interface, member: "Now")) { _ in }
        // No await in between: a call made now (such as GetManagedObjects) cannot overtake the rule.
        #expect(sentRules.value == ["type='signal',interface='\(Self.interface)',member='Now'"])
        withExtendedLifetime(subscription) {}
    }

    /// The match rules the daemon itself holds for `connection`, or nil when the daemon was
    /// built without its statistics interface.
    static func daemonMatchRuleCount(of connection: Connection) async throws -> UInt32? {
        let reply: [DBusValue]
        do {
            reply = try await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                              interface: "org.freedesktop.DBus.Debug.Stats", member: "GetConnectionStats",
                                              arguments: [.string(connection.uniqueName)])
        } catch DBusError.remote(_, _) {
            return nil
        }
        guard let first = reply.first else { return nil }
        return try BlueZShapes.propertyMap(first)["MatchRules"]?.as(UInt32.self)
    }

    @Test func aThousandPathSubscriptionsOnOneInterfaceNeedOneBusRulePlusTheOwnerRule() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        try await server.claimName("com.example.Many")
        var subscriptions: [SignalSubscription] = []
        let received = Mailbox<ObjectPath?>("a path signal")
        for index in 0..<1000 {
            let path = try ObjectPath("/objects/o\(index)")
            subscriptions.append(try client.signals.subscribe(
                SignalMatch(sender: "com.example.Many", path: path, interface: Self.interface)) { received.post($0.path) })
        }
        try await client.syncWithBus()
        // One rule for (sender, interface) and the NameOwnerChanged rule that tracks the owner.
        #expect(client.signals.busRuleCount == 2)
        if let daemonCount = try await Self.daemonMatchRuleCount(of: client) {
            #expect(daemonCount == 2)
        }
        try Self.emit(server, path: "/objects/o999")
        #expect(try await received.next() == "/objects/o999")
        withExtendedLifetime(subscriptions) {}
    }

    @Test func theLastSubscriptionOfARuleRemovesItFromTheBus() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let first = try client.signals.subscribe(SignalMatch(path: "/a", interface: Self.interface)) { _ in }
        let second = try client.signals.subscribe(SignalMatch(path: "/b", interface: Self.interface)) { _ in }
        try await client.syncWithBus()
        #expect(client.signals.busRuleCount == 1)
        first.cancel()
        await loopTurn()
        #expect(client.signals.busRuleCount == 1)
        second.cancel()
        await loopTurn()
        #expect(client.signals.busRuleCount == 0)
        try await client.syncWithBus()
        if let daemonCount = try await Self.daemonMatchRuleCount(of: client) {
            #expect(daemonCount == 0)
        }
    }

    @Test func subscribingWithAnInvalidInterfaceNameIsAnInvalidArgument() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let error = await dbusError { try client.signals.subscribe(SignalMatch(interface: "not-an-interface")) { _ in } }
        guard case .invalidArgument? = error else {
            Issue.record("expected .invalidArgument, got \(String(describing: error))")
            return
        }
        #expect(client.signals.busRuleCount == 0)
    }

    @Test func subscribingOnAClosedConnectionFailsWithDisconnected() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        client.close()
        let error = await dbusError { try client.signals.subscribe(SignalMatch(interface: Self.interface)) { _ in } }
        #expect(error == .disconnected)
    }

    // MARK: Name owners

    @Test func watchNameReportsTheCurrentOwner() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        try await server.claimName("com.example.Watched")
        let owners = Mailbox<String?>("an owner report")
        let watch = try client.signals.watchName("com.example.Watched") { owners.post($0) }
        #expect(try await owners.next() == server.uniqueName)
        #expect(client.signals.currentOwner(of: "com.example.Watched") == server.uniqueName)
        withExtendedLifetime(watch) {}
    }

    @Test func watchNameReportsNilForANameNobodyOwns() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let owners = Mailbox<String?>("an owner report")
        let watch = try client.signals.watchName("com.example.Nobody") { owners.post($0) }
        #expect(try await owners.next() == .some(nil))
        withExtendedLifetime(watch) {}
    }

    @Test func watchNameReportsNilWhenTheOwningConnectionCloses() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        try await server.claimName("com.example.Watched")
        let owners = Mailbox<String?>("an owner report")
        let watch = try client.signals.watchName("com.example.Watched") { owners.post($0) }
        #expect(try await owners.next() == server.uniqueName)
        server.close()
        #expect(try await owners.next() == .some(nil))
        #expect(client.signals.currentOwner(of: "com.example.Watched") == nil)
        withExtendedLifetime(watch) {}
    }

    @Test func watchNameReportsTheNewOwnerWhenAnotherConnectionClaimsTheName() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        try await server.claimName("com.example.Watched")
        let owners = Mailbox<String?>("an owner report")
        let watch = try client.signals.watchName("com.example.Watched") { owners.post($0) }
        #expect(try await owners.next() == server.uniqueName)
        server.close()
        #expect(try await owners.next() == .some(nil))
        let successor = try await Connection.open(bus.busAddress)
        try await successor.claimName("com.example.Watched")
        #expect(try await owners.next() == successor.uniqueName)
        withExtendedLifetime(watch) {}
    }

    @Test func aSecondWatcherOfATrackedNameHearsTheKnownOwnerToo() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        try await server.claimName("com.example.Watched")
        let firstOwners = Mailbox<String?>("the first watcher's report")
        let first = try client.signals.watchName("com.example.Watched") { firstOwners.post($0) }
        #expect(try await firstOwners.next() == server.uniqueName)
        let secondOwners = Mailbox<String?>("the second watcher's report")
        let second = try client.signals.watchName("com.example.Watched") { secondOwners.post($0) }
        #expect(try await secondOwners.next() == server.uniqueName)
        withExtendedLifetime((first, second)) {}
    }

    @Test func aCancelledWatchHearsNoMoreChanges() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        try await server.claimName("com.example.Watched")
        let cancelledOwners = Mailbox<String?>("the cancelled watcher's report")
        let cancelled = try client.signals.watchName("com.example.Watched") { cancelledOwners.post($0) }
        let keptOwners = Mailbox<String?>("the kept watcher's report")
        let kept = try client.signals.watchName("com.example.Watched") { keptOwners.post($0) }
        #expect(try await cancelledOwners.next() == server.uniqueName)
        #expect(try await keptOwners.next() == server.uniqueName)
        cancelled.cancel()
        await loopTurn()
        server.close()
        #expect(try await keptOwners.next() == .some(nil))
        #expect(cancelledOwners.receivedCount == 1)
        withExtendedLifetime(kept) {}
    }

    @Test func watchingAUniqueNameIsAnInvalidArgument() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let error = await dbusError { try client.signals.watchName(server.uniqueName) { _ in } }
        guard case .invalidArgument? = error else {
            Issue.record("expected .invalidArgument, got \(String(describing: error))")
            return
        }
    }
}
