import NIOCore

/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`); an address without a
/// prefix length is a network of that one address.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), host bits cleared.
    public let bytes: [UInt8]
    public let prefixLength: Int

    /// Parses `ADDRESS[/PREFIX]`; `nil` when it is not one.
    public init?(_ text: String) {
        guard text.utf8.count <= 64 else { return nil }
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPNetwork.addressBytes(String(parts[0])) else { return nil }
        let bits = address.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard (1...3).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let length = Int(parts[1]), length <= bits
            else { return nil }
            prefix = length
        }
        self.prefixLength = prefix
        self.bytes = IPNetwork.masked(address, prefix: prefix)
    }

    /// Whether `address` (4 or 16 bytes) lies in this network. An IPv4-mapped IPv6 address
    /// (`::ffff:192.0.2.1`) is compared as its IPv4 address.
    public func contains(_ address: [UInt8]) -> Bool {
        let address = IPNetwork.unmapped(address)
        guard address.count == bytes.count else { return false }
        return IPNetwork.masked(address, prefix: prefixLength) == bytes
    }

    public var description: String {
        let address: String
        if bytes.count == 4 {
            address = bytes.map(String.init).joined(separator: ".")
        } else {
            address = (try? SocketAddress(packedIPAddress: ByteBuffer(bytes: bytes), port: 0).ipAddress).flatMap { $0 } ?? "?"
        }
        return "\(address)/\(prefixLength)"
    }

    /// The bytes of a literal IPv4 or IPv6 address (no brackets, no zone), or `nil`. Parsed by the
    /// system's `inet_pton`, through NIO, so it takes exactly the standard forms.
    static func addressBytes(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 45,
            text.utf8.allSatisfy({ byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":")
            }),
            let address = try? SocketAddress(ipAddress: text, port: 0)
        else { return nil }
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            return withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        case .unixDomainSocket:
            return nil
        }
    }

    /// An IPv4-mapped IPv6 address as its 4 IPv4 bytes; any other address unchanged.
    static func unmapped(_ address: [UInt8]) -> [UInt8] {
        guard address.count == 16, address[0..<10].allSatisfy({ $0 == 0 }), address[10] == 0xFF, address[11] == 0xFF else {
            return address
        }
        return Array(address[12..<16])
    }

    static func masked(_ address: [UInt8], prefix: Int) -> [UInt8] {
        var result = address
        for index in result.indices {
            let keep = max(0, min(8, prefix - index * 8))
            result[index] &= keep == 8 ? 0xFF : ~(0xFF >> keep)
        }
        return result
    }
}

/// Which request header a trusted proxy writes the client's address into.
public enum ForwardedHeader: String, Sendable, CaseIterable {
    /// `X-Forwarded-For: client, proxy1, proxy2` (nginx's `$proxy_add_x_forwarded_for`, HAProxy's
    /// `option forwardfor`, most load balancers).
    case xForwardedFor = "x-forwarded-for"
    /// `Forwarded: for=client, for=proxy1` (RFC 7239).
    case forwarded
}

/// The reverse proxies whose word about the client's address the server takes
/// (``ServerConfiguration/trustedProxies``), and how it reads that word.
///
/// Only when the socket's peer is in one of ``networks`` is the header read; the client is then
/// its rightmost address that is not itself a trusted proxy: each proxy appends the address it
/// received the request from, so everything to the right of that address was written by proxies
/// the server trusts, and everything to its left by someone it does not. A header that is missing,
/// too long, or holds anything but addresses leaves the peer's address in place.
public struct TrustedProxies: Sendable, Hashable {
    public var networks: [IPNetwork]
    public var header: ForwardedHeader

    /// The most bytes of the header (all its fields together) that are read.
    public static let maxHeaderBytes = 4096
    /// The most addresses (hops) the header may list.
    public static let maxHops = 64

    public init(networks: [IPNetwork] = [], header: ForwardedHeader = .xForwardedFor) {
        self.networks = networks
        self.header = header
    }

    public var isEmpty: Bool { networks.isEmpty }

    func trusts(_ address: [UInt8]) -> Bool {
        networks.contains { $0.contains(address) }
    }

    /// The client's address as text: the peer's, or, when the peer is a trusted proxy, the one its
    /// header names. `values` are the header's fields in the order they came.
    public func clientAddress(peer: String, values: [Substring]) -> String {
        guard !networks.isEmpty, let peerBytes = IPNetwork.addressBytes(peer), trusts(peerBytes) else { return peer }
        guard !values.isEmpty, values.reduce(0, { $0 + $1.utf8.count }) <= Self.maxHeaderBytes else { return peer }
        var hops: [(text: String, bytes: [UInt8])] = []
        for value in values {
            guard let parsed = header == .forwarded ? Self.forwardedFor(value) : Self.xForwardedFor(value) else {
                return peer
            }
            hops += parsed
            if hops.count > Self.maxHops { return peer }
        }
        guard let leftmost = hops.first else { return peer }
        for hop in hops.reversed() where !trusts(hop.bytes) {
            return hop.text
        }
        return leftmost.text
    }

    /// The addresses of one `X-Forwarded-For` field, left to right; `nil` when any element is not
    /// an address.
    static func xForwardedFor(_ value: Substring) -> [(text: String, bytes: [UInt8])]? {
        var hops: [(text: String, bytes: [UInt8])] = []
        for element in value.split(separator: ",", omittingEmptySubsequences: false) {
            guard let hop = node(trimmed(element)) else { return nil }
            hops.append(hop)
        }
        return hops
    }

    /// The `for=` addresses of one `Forwarded` field (RFC 7239 §4), left to right; `nil` when the
    /// field does not parse, an element has no `for=`, or a `for=` is not an address (`unknown` and
    /// obfuscated identifiers included: the client cannot be told apart then).
    static func forwardedFor(_ value: Substring) -> [(text: String, bytes: [UInt8])]? {
        var hops: [(text: String, bytes: [UInt8])] = []
        var scanner = ForwardedScanner(Array(value.utf8))
        repeat {
            var forValue: String?
            repeat {
                guard let (name, pairValue) = scanner.pair() else { return nil }
                if name == "for" {
                    guard forValue == nil else { return nil }
                    forValue = pairValue
                }
            } while scanner.consume(UInt8(ascii: ";"))
            guard let forValue, let hop = node(forValue[...]) else { return nil }
            hops.append(hop)
        } while scanner.consume(UInt8(ascii: ","))
        guard scanner.atEnd() else { return nil }
        return hops
    }

    /// One node: `192.0.2.1`, `192.0.2.1:8080`, `2001:db8::1`, `[2001:db8::1]` or
    /// `[2001:db8::1]:8080`; the port is dropped.
    static func node(_ text: Substring) -> (text: String, bytes: [UInt8])? {
        var address = text
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]") else { return nil }
            let rest = address[address.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && isPort(rest.dropFirst())) else { return nil }
            address = address[address.index(after: address.startIndex)..<close]
            guard address.contains(":") else { return nil }
        } else if let colon = address.firstIndex(of: ":"), address.lastIndex(of: ":") == colon {
            // IPv4 with a port: one colon only (an IPv6 address has at least two).
            guard isPort(address[address.index(after: colon)...]) else { return nil }
            address = address[..<colon]
        }
        let literal = String(address)
        guard let bytes = IPNetwork.addressBytes(literal) else { return nil }
        let unmapped = IPNetwork.unmapped(bytes)
        if unmapped.count == 4 && bytes.count == 16 {
            return (unmapped.map(String.init).joined(separator: "."), unmapped)
        }
        return (literal, bytes)
    }

    /// 0–65535 in decimal.
    static func isPort(_ text: Substring) -> Bool {
        (1...5).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } && (Int(text) ?? .max) <= 65535
    }

    static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}

/// Reads `Forwarded`'s grammar (RFC 7239 §4): elements separated by commas, pairs by semicolons,
/// `name=value` with a token or a quoted string, optional whitespace around the separators. One
/// step per byte.
struct ForwardedScanner {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether only whitespace is left.
    mutating func atEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    /// Consumes `byte` (after optional whitespace); `false`, consuming only the whitespace, when the
    /// next byte is another.
    mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// `name=value`, the name lowercased (names are case-insensitive), the value unquoted.
    mutating func pair() -> (String, String)? {
        skipWhitespace()
        guard let name = token(), consume(UInt8(ascii: "=")) else { return nil }
        let value: String?
        if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            value = quoted()
        } else {
            value = token()
        }
        guard let value else { return nil }
        skipWhitespace()
        return (name.lowercased(), value)
    }

    mutating func token() -> String? {
        let start = index
        while index < bytes.count, Self.isTokenByte(bytes[index]) { index += 1 }
        guard index > start else { return nil }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// A quoted string: `"` … `"`, with `\` escaping the next byte.
    mutating func quoted() -> String? {
        index += 1
        var value: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: value, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                value.append(bytes[index])
                index += 1
            case 0x00..<0x20 where byte != 0x09, 0x7F:
                return nil
            default:
                value.append(byte)
            }
        }
        return nil
    }

    /// RFC 9110's `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
