import Crypto
import Foundation
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// The token reply that replaced a refresh token, sealed so that only that refresh token opens it.
///
/// Within ``AuthConfiguration/refreshReuseGrace`` of a rotation, a second exchange of the rotated
/// token gets the same reply again instead of revoking the family: two processes of one app (an app
/// and its widget) that refreshed the same credential at once both end with the pair the first one
/// got. The server keeps no token in the clear for this: the reply is encrypted (AES-GCM) with a key
/// derived (HKDF-SHA256) from the rotated refresh token, which only its holder knows, and is deleted
/// once the window has passed.
enum RotatedSuccessor {
    /// Domain separation for the key derivation.
    private static let info = Data("outpost refresh successor v1".utf8)

    private static func key(for refreshToken: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Data(refreshToken.utf8)), info: info, outputByteCount: 32)
    }

    /// Seals `reply` (the access token's absolute expiry in milliseconds under `access_expires_at`)
    /// for the holder of `refreshToken`, as base64url text.
    static func seal(_ reply: JSONValue, for refreshToken: String) throws -> String {
        let plain = try JSONEncoder().encode(reply)
        let box = try AES.GCM.seal(plain, using: key(for: refreshToken))
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        return Base64URL.encode(combined)
    }

    /// The reply sealed for `refreshToken`; `nil` when the text was not sealed for it (or is not a seal).
    static func open(_ sealed: String, with refreshToken: String) -> JSONValue? {
        guard let bytes = Base64URL.decode(sealed), bytes.count < 64 * 1024,
            let box = try? AES.GCM.SealedBox(combined: bytes),
            let plain = try? AES.GCM.open(box, using: key(for: refreshToken))
        else { return nil }
        return try? JSONDecoder().decode(JSONValue.self, from: plain)
    }
}
