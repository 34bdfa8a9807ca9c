import Crypto
import Foundation

/// The client side of PostgreSQL's password authentication: cleartext, md5 and SCRAM-SHA-256
/// (RFC 5802 and RFC 7677, without channel binding). The password stays in memory only; no
/// message or error includes it.
enum PostgresWireAuthentication {
    /// The md5 method's answer: `md5` + hex(md5(hex(md5(password + user)) + salt)).
    static func md5Answer(user: String, password: String, salt: [UInt8]) -> [UInt8] {
        let inner = hex(Insecure.MD5.hash(data: Array((password + user).utf8)))
        return Array(("md5" + hex(Insecure.MD5.hash(data: Array(inner.utf8) + salt))).utf8)
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    /// The largest iteration count accepted from a server (PostgreSQL uses 4096 by default): a
    /// hostile server cannot make the client hash for minutes.
    static let maximumIterations = 1_000_000

    /// One SCRAM-SHA-256 exchange: ``clientFirst`` goes in SASLInitialResponse, the server's first
    /// message gives ``clientFinal(serverFirst:)``, and ``verify(serverFinal:)`` checks that the
    /// server knew the password too.
    struct SCRAM {
        let password: String
        let clientNonce: String
        /// Left empty by PostgreSQL clients: the server takes the user from the startup message.
        let user: String
        private(set) var expectedServerSignature: [UInt8] = []

        /// A fresh exchange with a random nonce (or the given one, for known-answer tests).
        init(password: String, user: String = "", clientNonce: String? = nil) {
            self.password = password
            self.user = user
            if let clientNonce {
                self.clientNonce = clientNonce
            } else {
                var generator = SystemRandomNumberGenerator()
                let nonce = (0..<18).map { _ in UInt8.random(in: 0...255, using: &generator) }
                self.clientNonce = Data(nonce).base64EncodedString()
            }
        }

        var clientFirstBare: String { "n=\(user),r=\(clientNonce)" }
        var clientFirst: [UInt8] { Array(("n,," + clientFirstBare).utf8) }

        /// The client's final message for the server's first one (`r=…,s=…,i=…`).
        ///
        /// - Throws: ``PostgresWireError/protocolViolation(_:)`` when the message is malformed,
        ///   its nonce does not extend ours, or its iteration count is out of bounds.
        mutating func clientFinal(serverFirst: [UInt8]) throws -> [UInt8] {
            guard let text = String(bytes: serverFirst, encoding: .utf8) else {
                throw PostgresWireError.protocolViolation("the SCRAM server-first message is not UTF-8")
            }
            var attributes: [Character: Substring] = [:]
            for part in text.split(separator: ",") {
                guard part.count >= 2, part.dropFirst().first == "=", let key = part.first else { continue }
                attributes[key] = part.dropFirst(2)
            }
            guard let nonce = attributes["r"], nonce.hasPrefix(clientNonce), nonce.count > clientNonce.count,
                let saltText = attributes["s"], let salt = Data(base64Encoded: String(saltText)), !salt.isEmpty,
                let iterationText = attributes["i"], let iterations = Int(iterationText),
                (1...PostgresWireAuthentication.maximumIterations).contains(iterations)
            else {
                throw PostgresWireError.protocolViolation(
                    "the SCRAM server-first message lacks a nonce extending ours, a salt or an iteration count (1 to \(PostgresWireAuthentication.maximumIterations))"
                )
            }
            let salted = Self.hi(password: Array(password.utf8), salt: Array(salt), iterations: iterations)
            let clientKey = Self.hmac(key: salted, Array("Client Key".utf8))
            let storedKey = Array(SHA256.hash(data: clientKey))
            let withoutProof = "c=biws,r=\(nonce)"
            let authMessage = Array("\(clientFirstBare),\(text),\(withoutProof)".utf8)
            let signature = Self.hmac(key: storedKey, authMessage)
            let proof = zip(clientKey, signature).map { $0 ^ $1 }
            let serverKey = Self.hmac(key: salted, Array("Server Key".utf8))
            expectedServerSignature = Self.hmac(key: serverKey, authMessage)
            return Array("\(withoutProof),p=\(Data(proof).base64EncodedString())".utf8)
        }

        /// - Throws: ``PostgresWireError/protocolViolation(_:)`` when the server's signature is
        ///   missing or wrong (it does not know the password: the connection is not trusted).
        func verify(serverFinal: [UInt8]) throws {
            guard let text = String(bytes: serverFinal, encoding: .utf8), text.hasPrefix("v="),
                let signature = Data(base64Encoded: String(text.dropFirst(2).prefix { $0 != "," })),
                !expectedServerSignature.isEmpty, Array(signature) == expectedServerSignature
            else {
                throw PostgresWireError.protocolViolation("the server's SCRAM signature does not prove it knows the password")
            }
        }

        static func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
            Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        }

        /// PBKDF2-HMAC-SHA-256 with one block of output (RFC 5802's Hi).
        static func hi(password: [UInt8], salt: [UInt8], iterations: Int) -> [UInt8] {
            let key = SymmetricKey(data: password)
            var block = Array(HMAC<SHA256>.authenticationCode(for: salt + [0, 0, 0, 1], using: key))
            var result = block
            for _ in 1..<iterations {
                block = Array(HMAC<SHA256>.authenticationCode(for: block, using: key))
                for index in result.indices { result[index] ^= block[index] }
            }
            return result
        }
    }
}
