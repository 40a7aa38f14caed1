import Foundation

/// A property dictionary (`a{sv}`): the shape of `org.freedesktop.DBus.Properties`' answers and of
/// option lists.
public typealias PropertyMap = [String: DBusValue]

/// The interfaces of one object with their properties (`a{sa{sv}}`).
public typealias InterfaceMap = [String: PropertyMap]

/// `org.freedesktop.DBus.ObjectManager.GetManagedObjects`' answer (`a{oa{sa{sv}}}`).
public typealias ManagedObjects = [ObjectPath: InterfaceMap]

