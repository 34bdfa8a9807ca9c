import Foundation
@_spi(OutpostInternal) import OutpostCore
import Testing

@testable import OutpostServer

@Suite("A rotated refresh token's sealed successor")
struct RotatedSuccessorTests {
    @Test("opens with the refresh token it was sealed for, and with no other; the seal shows no token")
    func sealedForOneToken() throws {
        let reply: JSONValue = ["access_token": "opa_new", "refresh_token": "opr_new", "expires_in": 900]
        let sealed = try RotatedSuccessor.seal(reply, for: "opr_old")
        #expect(RotatedSuccessor.open(sealed, with: "opr_old") == reply)
        #expect(RotatedSuccessor.open(sealed, with: "opr_other") == nil)
        #expect(!sealed.contains("opa_new") && !sealed.contains("opr_new"))
        #expect(try RotatedSuccessor.seal(reply, for: "opr_old") != sealed, "a fresh nonce every time")
        // A changed byte, a cut seal and text that is no seal are refused, not trusted.
        var bytes = Array(sealed.utf8)
        bytes[bytes.count / 2] = bytes[bytes.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(RotatedSuccessor.open(String(decoding: bytes, as: UTF8.self), with: "opr_old") == nil)
        #expect(RotatedSuccessor.open(String(sealed.prefix(20)), with: "opr_old") == nil)
        #expect(RotatedSuccessor.open("not a seal", with: "opr_old") == nil)
    }
}
