import OutpostTestSupport
import Testing

@testable import OutpostServer

/// The client's address behind trusted proxies: CIDRs, `X-Forwarded-For`, `Forwarded`, and input
/// that must leave the peer's address in place.
@Suite("Trusted proxies")
struct TrustedProxiesTests {
    static func proxies(_ cidrs: [String], header: ForwardedHeader = .xForwardedFor) -> TrustedProxies {
        TrustedProxies(networks: cidrs.compactMap(IPNetwork.init), header: header)
    }

    @Test("CIDRs: IPv4 and IPv6, host bits ignored, IPv4-mapped IPv6 peers compared as IPv4")
    func networks() throws {
        let ten = try #require(IPNetwork("10.1.2.3/8"))
        #expect(ten.description == "10.0.0.0/8")
        #expect(ten.contains(try #require(IPNetwork.addressBytes("10.200.0.1"))))
        #expect(!ten.contains(try #require(IPNetwork.addressBytes("11.0.0.1"))))
        #expect(ten.contains(try #require(IPNetwork.addressBytes("::ffff:10.9.9.9"))))
        let v6 = try #require(IPNetwork("2001:db8::/32"))
        #expect(v6.contains(try #require(IPNetwork.addressBytes("2001:db8:ffff::1"))))
        #expect(!v6.contains(try #require(IPNetwork.addressBytes("2001:db9::1"))))
        #expect(!v6.contains(try #require(IPNetwork.addressBytes("10.0.0.1"))))
        let host = try #require(IPNetwork("127.0.0.1"))
        #expect(host.prefixLength == 32)
        #expect(IPNetwork("::1/128")?.prefixLength == 128)
        #expect(IPNetwork("0.0.0.0/0")?.contains([1, 2, 3, 4]) == true)
        for bad in [
            "", "10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/", "10.0.0/8", "example.com", "10.0.0.0/8/8", "1.2.3.4 ",
            "[::1]/128", "10.0.0.0/0x8", "fe80::1%eth0", String(repeating: "1", count: 100),
        ] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
    }

    @Test("X-Forwarded-For: the rightmost address that is not a trusted proxy, and only from a trusted peer")
    func xForwardedFor() {
        let trusted = Self.proxies(["127.0.0.1/32", "10.0.0.0/8"])
        // One proxy: it appended the client it saw.
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["203.0.113.7"]) == "203.0.113.7")
        // What the client wrote itself stands to the left of what the proxy appended, and is skipped.
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["6.6.6.6, 203.0.113.7"]) == "203.0.113.7")
        // A chain of trusted proxies is walked through; several fields count as one list.
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["198.51.100.2, 10.0.0.5", "10.1.1.1"]) == "198.51.100.2")
        // Every hop trusted: the leftmost.
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["10.0.0.9, 10.0.0.5"]) == "10.0.0.9")
        // Ports and brackets are dropped; IPv4-mapped IPv6 reads as IPv4.
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["203.0.113.7:4711"]) == "203.0.113.7")
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["[2001:db8::7]:443"]) == "2001:db8::7")
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["2001:db8::7"]) == "2001:db8::7")
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["::ffff:203.0.113.9"]) == "203.0.113.9")
        #expect(trusted.clientAddress(peer: "::ffff:127.0.0.1", values: ["203.0.113.7"]) == "203.0.113.7")
        // An untrusted peer's header is never read.
        #expect(trusted.clientAddress(peer: "192.0.2.50", values: ["203.0.113.7"]) == "192.0.2.50")
        #expect(Self.proxies([]).clientAddress(peer: "127.0.0.1", values: ["203.0.113.7"]) == "127.0.0.1")
        // No header: the peer.
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: []) == "127.0.0.1")
    }

    @Test("Forwarded (RFC 7239): for= of each element, quoted IPv6 with ports, other parameters and case ignored")
    func forwarded() {
        let trusted = Self.proxies(["127.0.0.1/32", "10.0.0.0/8"], header: .forwarded)
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["for=192.0.2.60;proto=http;by=203.0.113.43"]) == "192.0.2.60")
        #expect(
            trusted.clientAddress(peer: "127.0.0.1", values: [#"for=6.6.6.6, For="[2001:db8:cafe::17]:4711""#])
                == "2001:db8:cafe::17")
        #expect(
            trusted.clientAddress(peer: "127.0.0.1", values: ["for=198.51.100.1, for=10.0.0.2 ; proto=https"]) == "198.51.100.1")
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: [#"proto=https;for="192.0.2.1:80""#]) == "192.0.2.1")
        // X-Forwarded-For is not read when the proxies write Forwarded, and the other way round.
        #expect(trusted.clientAddress(peer: "127.0.0.1", values: ["192.0.2.1"]) == "127.0.0.1")
        #expect(Self.proxies(["127.0.0.1/32"]).clientAddress(peer: "127.0.0.1", values: ["for=192.0.2.1"]) == "127.0.0.1")
    }

    @Test("hostile or malformed headers leave the peer's address: garbage, unknown, too many hops, too long")
    func hostile() {
        let xff = Self.proxies(["127.0.0.1/32"])
        let forwarded = Self.proxies(["127.0.0.1/32"], header: .forwarded)
        for value in [
            "", " ", ",", "203.0.113.7,", ",203.0.113.7", "203.0.113.7 203.0.113.8", "unknown", "example.com", "203.0.113.256",
            "203.0.113.7:99999", "203.0.113.7:", "[2001:db8::1", "[2001:db8::1]x", "[203.0.113.7]", "2001:db8::1:80:",
            "1.2.3.4\u{0}",
            "fe80::1%eth0", "\u{1F600}", String(repeating: "1.2.3.4,", count: 10) + "x",
        ] {
            #expect(xff.clientAddress(peer: "127.0.0.1", values: [value[...]]) == "127.0.0.1", "\(value)")
        }
        for value in [
            "for=unknown", "for=_hidden", "for=", "for", "proto=http", #"for="192.0.2.1"#, #"for="\"#,
            "for=192.0.2.1;for=192.0.2.2",
            "for=192.0.2.1,", "for=192.0.2.1 for=192.0.2.2", #"for="[2001:db8::1]"x"#, "for=[2001:db8::1]", #"for="a\u{1}b""#,
            "=192.0.2.1", "for==192.0.2.1",
        ] {
            #expect(forwarded.clientAddress(peer: "127.0.0.1", values: [value[...]]) == "127.0.0.1", "\(value)")
        }
        // Bounded: more hops or bytes than the limits, whatever they say.
        let hops = Array(repeating: "10.0.0.1", count: TrustedProxies.maxHops + 1).joined(separator: ",")
        #expect(xff.clientAddress(peer: "127.0.0.1", values: [hops[...]]) == "127.0.0.1")
        let long = String(repeating: " ", count: TrustedProxies.maxHeaderBytes) + "203.0.113.7"
        #expect(xff.clientAddress(peer: "127.0.0.1", values: [long[...]]) == "127.0.0.1")
        // Seeded random bytes: no crash, and the answer is the peer or an address that parses.
        var random = SeededGenerator(state: 7)
        let alphabet = Array(#"0123456789abcdef.:[]"=;, for\_"#.utf8)
        for _ in 0..<2000 {
            let length = Int(random.next() % 40)
            let bytes = (0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            let value = String(decoding: bytes, as: UTF8.self)
            for proxies in [xff, forwarded] {
                let answer = proxies.clientAddress(peer: "127.0.0.1", values: [value[...]])
                #expect(answer == "127.0.0.1" || IPNetwork.addressBytes(answer) != nil, "\(value) gave \(answer)")
            }
        }
    }
}
