import BleDBus
import BleSim
import BleTestSupport
import Foundation
import FoundationXML
import Testing

/// Introspection parity: for each XML bluetoothd 5.66 answered (root, /org/bluez, an adapter,
/// a device, a service, a read+write-without-response+notify characteristic, a descriptor),
/// BleSim's corresponding object declares the same interfaces, methods (argument types and
/// directions), signals and properties (types and access). Child nodes are compared only
/// where both sides have them.
struct IntrospectionParityTests {
    /// One introspected interface, order kept where D-Bus gives one.
    struct InterfaceShape: Equatable, CustomStringConvertible {
        struct Argument: Equatable { var type: String; var direction: String? }
        var methods: [String: [Argument]] = [:]
        var methodOrder: [String] = []
        var signals: [String: [String]] = [:]
        var properties: [String: String] = [:]
        var propertyOrder: [String] = []

        var description: String {
            let methodText = methodOrder.map { name in
                "\(name)(\(methods[name]!.map { "\($0.direction ?? "") \($0.type)" }.joined(separator: ", ")))"
            }
            return "methods: \(methodText), signals: \(signals.sorted { $0.key < $1.key }), properties: \(propertyOrder.map { "\($0) \(properties[$0]!)" })"
        }
    }

    /// A parsed `<node>`.
    struct NodeShape {
        var interfaces: [String: InterfaceShape] = [:]
        var interfaceOrder: [String] = []
        var children: [String] = []
    }

    /// Reads introspection XML with FoundationXML's XMLParser.
    final class Reader: NSObject, XMLParserDelegate {
        private(set) var node = NodeShape()
        private var depth = 0
        private var interface: String?
        private var member: (kind: String, name: String)?
        private(set) var failure: String?

        static func parse(_ xml: String) throws -> NodeShape {
            let reader = Reader()
            let parser = XMLParser(data: Data(xml.utf8))
            parser.delegate = reader
            // The DOCTYPE names an external DTD; never fetch it.
            parser.shouldResolveExternalEntities = false
            guard parser.parse(), reader.failure == nil else {
                throw FixtureError.unexpected("unparsable introspection: \(reader.failure ?? parser.parserError.map { "\($0)" } ?? "?")")
            }
            return reader.node
        }

        func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            switch element {
            case "node":
                depth += 1
                if depth == 2, let name = attributes["name"] { node.children.append(name) }
            case "interface":
                guard let name = attributes["name"] else { return failure = "interface without a name" }
                interface = name
                node.interfaces[name] = InterfaceShape()
                node.interfaceOrder.append(name)
            case "method", "signal":
                guard let interface, let name = attributes["name"] else { return failure = "\(element) outside an interface" }
                member = (element, name)
                if element == "method" {
                    node.interfaces[interface]?.methods[name] = []
                    node.interfaces[interface]?.methodOrder.append(name)
                } else {
                    node.interfaces[interface]?.signals[name] = []
                }
            case "arg":
                guard let interface, let member, let type = attributes["type"] else { return failure = "arg outside a member" }
                if member.kind == "method" {
                    node.interfaces[interface]?.methods[member.name]?.append(.init(type: type, direction: attributes["direction"] ?? "in"))
                } else {
                    node.interfaces[interface]?.signals[member.name]?.append(type)
                }
            case "property":
                guard let interface, let name = attributes["name"], let type = attributes["type"], let access = attributes["access"] else {
                    return failure = "incomplete property"
                }
                node.interfaces[interface]?.properties[name] = "\(type) \(access)"
                node.interfaces[interface]?.propertyOrder.append(name)
            default:
                break
            }
        }

        func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
            switch element {
            case "node": depth -= 1
            case "interface": interface = nil
            case "method", "signal": member = nil
            default: break
            }
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
            failure = "\(parseError)"
        }
    }

    /// Reference file → BleSim object path below the golden device (or absolute).
    static let objects: [(String, String)] = [
        ("root.xml", "/"),
        ("org_bluez.xml", "/org/bluez"),
        ("adapter.xml", "/org/bluez/hci0"),
        ("device.xml", "{device}"),
        ("device_service0015.xml", "{device}/service000c"),
        // The reference char001d has read, write-without-response and notify: the golden combo.
        ("device_service0015_char001d.xml", "{device}/service000c/char0019"),
        ("device_service0015_char0016_desc0018.xml", "{device}/service000c/char001c/desc001e"),
    ]

    @BleLoop
    static func introspect(_ fixture: SimulatorFixture, _ path: String) async throws -> NodeShape {
        let resolved = try ObjectPath(path.replacingOccurrences(of: "{device}", with: SimulatorFixture.devicePath(Golden.address).rawValue))
        let reply = try await fixture.call(resolved, Interface.introspectable, "Introspect")
        guard case .string(let xml)? = reply.first else { throw FixtureError.unexpected("Introspect replied \(reply)") }
        return try Reader.parse(xml)
    }

    @BleLoop
    @Test(arguments: IntrospectionParityTests.objects)
    func bleSimIntrospectsLikeBluetoothd(reference file: String, object path: String) async throws {
        let reference = try Reader.parse(try #require(ReferenceIntrospection.documents[file]))
        let (fixture, _) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let ours = try await IntrospectionParityTests.introspect(fixture, path)
        #expect(reference.interfaces.count >= 2 && reference.interfaces.values.contains { !$0.methods.isEmpty },
                "\(file) parsed into \(reference.interfaceOrder)")
        #expect(Set(ours.interfaces.keys) == Set(reference.interfaces.keys), "\(file): interfaces")
        #expect(ours.interfaceOrder == reference.interfaceOrder, "\(file): interface order")
        for name in reference.interfaceOrder {
            guard let mine = ours.interfaces[name], let theirs = reference.interfaces[name] else { continue }
            #expect(mine.methods == theirs.methods, "\(file) \(name): methods\n ours:   \(mine)\n theirs: \(theirs)")
            #expect(mine.signals == theirs.signals, "\(file) \(name): signals")
            #expect(mine.properties == theirs.properties, "\(file) \(name): properties\n ours:   \(mine)\n theirs: \(theirs)")
            #expect(mine.propertyOrder == theirs.propertyOrder, "\(file) \(name): property order")
            #expect(mine.methodOrder == theirs.methodOrder, "\(file) \(name): method order")
        }
        // Children: the objects both sides have look alike (root's "org", /org/bluez's adapters).
        let shared = Set(ours.children).intersection(reference.children)
        if ["root.xml", "org_bluez.xml"].contains(file) { #expect(shared == Set(reference.children), "\(file): children") }
        #expect(ours.children == ours.children.sorted(), "children listed in order")
    }

    @BleLoop
    @Test func childNodesNameTheExportedObjectsBelow() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let deviceNode = try await IntrospectionParityTests.introspect(fixture, device.rawValue)
        #expect(deviceNode.children == ["service0008", "service000c"])
        let service = try await IntrospectionParityTests.introspect(fixture, device.rawValue + "/service000c")
        #expect(service.children == ["char000d", "char000f", "char0011", "char0013", "char0016", "char0019", "char001c"])
        let characteristic = try await IntrospectionParityTests.introspect(fixture, device.rawValue + "/service000c/char0019")
        #expect(characteristic.children == ["desc001b"])
    }

    @Test func theEmbeddedReferenceMatchesTheSharedFiles() throws {
        let folder = URL(fileURLWithPath: "/work/shared/reference/bluez-introspection")
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        let files = names.filter { $0.hasSuffix(".xml") }
        #expect(Set(files) == Set(ReferenceIntrospection.documents.keys))
        for name in files {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            #expect(text.trimmingCharacters(in: .newlines) == ReferenceIntrospection.documents[name], "\(name) changed; regenerate the copy")
        }
    }
}
