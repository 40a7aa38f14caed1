/// Writes introspection XML exactly as BlueZ's gdbus does, so that tools comparing our objects
/// with bluetoothd's see the same text.
enum IntrospectionWriter {
    struct Interface {
        var name: String
        var methods: [(name: String, inArguments: [ArgumentDescription], outArguments: [ArgumentDescription])]
        var signals: [SignalDescription]
        var properties: [(name: String, type: DBusType, access: String)]

        init(name: String, methods: [(name: String, inArguments: [ArgumentDescription], outArguments: [ArgumentDescription])],
             signals: [SignalDescription], properties: [(name: String, type: DBusType, access: String)]) {
            self.name = name
            self.methods = methods
            self.signals = signals
            self.properties = properties
        }

        init(_ exported: ExportedInterface) {
            self.init(name: exported.name,
                      methods: exported.methods.map { ($0.name, $0.inArguments, $0.outArguments) },
                      signals: exported.signals,
                      properties: exported.properties.map { ($0.name, $0.type, $0.access.rawValue) })
        }
    }

    static let introspectable = Interface(
        name: ObjectRegistry.Standard.introspectable,
        methods: [("Introspect", [], [ArgumentDescription("xml", .string)])], signals: [], properties: [])

    static let properties = Interface(
        name: ObjectRegistry.Standard.properties,
        methods: [
            ("Get", [ArgumentDescription("interface", .string), ArgumentDescription("name", .string)],
             [ArgumentDescription("value", .variant)]),
            ("Set", [ArgumentDescription("interface", .string), ArgumentDescription("name", .string),
                     ArgumentDescription("value", .variant)], []),
            ("GetAll", [ArgumentDescription("interface", .string)],
             [ArgumentDescription("properties", .dictionary(key: .string, value: .variant))]),
        ],
        signals: [SignalDescription("PropertiesChanged", [
            ArgumentDescription("interface", .string),
            ArgumentDescription("changed_properties", .dictionary(key: .string, value: .variant)),
            ArgumentDescription("invalidated_properties", .array(.string)),
        ])],
        properties: [])

    static let objectManager = Interface(
        name: ObjectRegistry.Standard.objectManager,
        methods: [("GetManagedObjects", [], [ArgumentDescription("objects", .dictionary(
            key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant))))])],
        signals: [
            SignalDescription("InterfacesAdded", [
                ArgumentDescription("object", .objectPath),
                ArgumentDescription("interfaces", .dictionary(key: .string, value: .dictionary(key: .string, value: .variant))),
            ]),
            SignalDescription("InterfacesRemoved", [
                ArgumentDescription("object", .objectPath),
                ArgumentDescription("interfaces", .array(.string)),
            ]),
        ],
        properties: [])

    static func document(interfaces: [Interface], children: [String]) -> String {
        var xml = "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
        xml += "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>"
        for interface in interfaces {
            xml += "<interface name=\"\(escape(interface.name))\">"
            for method in interface.methods {
                xml += "<method name=\"\(escape(method.name))\">"
                for argument in method.inArguments {
                    xml += "<arg name=\"\(escape(argument.name))\" type=\"\(escape(argument.type.signature))\" direction=\"in\"/>\n"
                }
                for argument in method.outArguments {
                    xml += "<arg name=\"\(escape(argument.name))\" type=\"\(escape(argument.type.signature))\" direction=\"out\"/>\n"
                }
                xml += "</method>"
            }
            for signal in interface.signals {
                xml += "<signal name=\"\(escape(signal.name))\">"
                for argument in signal.arguments {
                    xml += "<arg name=\"\(escape(argument.name))\" type=\"\(escape(argument.type.signature))\"/>\n"
                }
                xml += "</signal>\n"
            }
            for property in interface.properties {
                xml += "<property name=\"\(escape(property.name))\" type=\"\(escape(property.type.signature))\" access=\"\(property.access)\"></property>"
            }
            xml += "</interface>"
        }
        for child in children {
            xml += "<node name=\"\(escape(child))\"/>"
        }
        xml += "</node>"
        return xml
    }

    private static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
